// lib/core: teams and contexts, the objects behind shmem_team_t and shmem_ctx_t.
//
// A team is an ordered set of world PEs plus a scratch slot (the same index on every member) that
// its collectives use; collectives see it through a TeamView (lib/coll/team_view.h). A context is
// a team plus options; RMA and AMO calls on a context translate the PE through its team.
#pragma once

#include <shmem.h>

#include <vector>

#include "lib/coll/team_view.h"
#include "lib/core/runtime.h"

struct hoshmem_team {
  hoshmem::TeamView view;    // rank, size, world ranks, scratch slot
  std::vector<int> members;  // member index -> world PE (view.world points into this)
  shmem_team_config_t config{};
  long config_mask = 0;
  bool predefined = false;   // SHMEM_TEAM_WORLD / SHMEM_TEAM_SHARED: never destroyed by the user
};

struct hoshmem_ctx {
  hoshmem_team *team;
  long options;
};

namespace hoshmem {

// Creates SHMEM_TEAM_WORLD (slot 0) and SHMEM_TEAM_SHARED (slot 1) at shmem_init, and the
// default context; destroys every team at the last shmem_finalize.
void create_predefined_teams();
void destroy_all_teams();

hoshmem_team &world_team();

// World PE of team member `pe` of `team`; fatal when `pe` is not a member index.
inline int team_world_pe(const hoshmem_team *team, int pe, const char *routine) {
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(team->view.size)) [[unlikely]]
    report_bad_pe(pe, routine);
  return team->view.world[pe];
}

}  // namespace hoshmem
