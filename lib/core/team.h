// lib/core: teams and contexts, the objects behind shmem_team_t and shmem_ctx_t.
//
// A team is an ordered set of world PEs plus a scratch slot (the same index on every member) that
// its collectives use; collectives see it through a TeamView (lib/coll/team_view.h). A context is
// a team plus options; RMA and AMO calls on a context translate the PE through its team.
//
// Scratch slots. Each PE has shm::kTeamSlots slots; slot 0 is WORLD's, slot 1 SHARED's. A new team
// takes the lowest slot that is free on every one of its members, agreed during the split by an
// OR-allreduce of the members' used-slot bitmaps over the parent team (recursive doubling:
// O(log N) messages per PE, lib/coll/team_exchange.h). That exchange uses the last kTeamMgmtBytes
// of the *parent's* slot, which collectives must leave alone. A slot is zeroed by its owner when
// the team is destroyed (after a team-wide synchronization), so stale counts never satisfy a
// later team's waits.
#pragma once

#include <shmem.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "lib/coll/team_view.h"
#include "lib/core/runtime.h"

namespace hoshmem {
// Bytes at the end of every team scratch slot reserved for team management (splits with this team
// as parent, and the synchronization of team_destroy).
constexpr size_t kTeamMgmtBytes = 16 * 1024;
constexpr size_t kTeamMgmtOffset = shm::kTeamSlotBytes - kTeamMgmtBytes;
}  // namespace hoshmem

struct hoshmem_ctx;

struct hoshmem_team {
  hoshmem::TeamView view;    // rank, size, world ranks, scratch slot
  std::vector<int> members;  // member index -> world PE (view.world points into this)
  shmem_team_config_t config{};
  long config_mask = 0;
  bool predefined = false;   // SHMEM_TEAM_WORLD / SHMEM_TEAM_SHARED: never destroyed by the user
  uint64_t mgmt_epoch = 0;   // team-management exchanges run over this team so far (same on all)
  int num_contexts = 0;      // contexts of this team alive on this PE
  std::vector<hoshmem_ctx *> contexts;  // alive contexts created on this team (not the default)
};

struct hoshmem_ctx {
  hoshmem_team *team;
  long options;
  // 1.6 sessions: hints only, recorded and never acted upon.
  long session_options = 0;
  bool in_session = false;
  size_t session_total_ops = SIZE_MAX;
  std::thread::id creator{};  // for SHMEM_CTX_PRIVATE: the only thread that may destroy it
  int lane = 0;  // its own transport lane (queue pairs, lock) across nodes; 0: the default's
};

namespace hoshmem {

// Creates SHMEM_TEAM_WORLD (slot 0) and SHMEM_TEAM_SHARED (slot 1) at shmem_init, and the
// default context; destroys every team and context at the last shmem_finalize.
void create_predefined_teams();
void destroy_all_teams();

hoshmem_team &world_team();

[[noreturn]] void report_bad_team_pe(const hoshmem_team *team, int pe, const char *routine);

// World PE of team member `pe` of `team`; fatal when `pe` is not a member index.
inline int team_world_pe(const hoshmem_team *team, int pe, const char *routine) {
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(team->view.size)) [[unlikely]]
    report_bad_team_pe(team, pe, routine);
  return team->view.world[pe];
}

// --- team management (collective over the parent; 0 on success, nonzero on all PEs on failure) ---

int team_split_strided(shmem_team_t parent, int start, int stride, int size,
                       const shmem_team_config_t *config, long config_mask,
                       shmem_team_t *new_team, const char *routine);
int team_split_2d(shmem_team_t parent, int xrange, const shmem_team_config_t *xaxis_config,
                  long xaxis_mask, shmem_team_t *xaxis_team,
                  const shmem_team_config_t *yaxis_config, long yaxis_mask,
                  shmem_team_t *yaxis_team, const char *routine);
void team_destroy(shmem_team_t team, const char *routine);
// Team index of world PE `world_pe` in `team`, or -1.
int team_rank_of(const hoshmem_team *team, int world_pe);

// Fatal when `team` is not a team handle this PE holds (checked only under SHMEM_DEBUG; a NULL
// handle is SHMEM_TEAM_INVALID and is each routine's own business).
void check_team(shmem_team_t team, const char *routine);

// --- contexts (not collective) ---

// 0 and a new context, or nonzero and SHMEM_CTX_INVALID (bad options, team limit reached).
int ctx_create(hoshmem_team *team, long options, shmem_ctx_t *ctx, const char *routine);
void ctx_destroy(shmem_ctx_t ctx, const char *routine);
[[noreturn]] void report_invalid_ctx(shmem_ctx_t ctx, const char *routine);
bool ctx_is_live(shmem_ctx_t ctx);

// World PE of PE `pe` of the context's team: the one step every shmem_ctx_ routine adds to its
// default-context twin. SHMEM_CTX_INVALID (and, under SHMEM_DEBUG, a destroyed or foreign handle)
// is reported. No lock: on shared memory no path takes one, so a SHMEM_CTX_PRIVATE context is
// lock-free as required, and so is every other context.
inline int ctx_world_pe(shmem_ctx_t ctx, int pe, const char *routine) {
  if (!ctx || (rt.debug && !ctx_is_live(ctx))) [[unlikely]]
    report_invalid_ctx(ctx, routine);
  return team_world_pe(ctx->team, pe, routine);
}

// Where an operation goes: the world PE, and the transport lane of its context for a PE of another
// node (0, the default context's, when given a bare PE).
struct Target {
  int pe;
  int lane = 0;
  Target(int world_pe) : pe(world_pe) {}  // NOLINT: a bare PE is the default context's target
  Target(int world_pe, int ctx_lane) : pe(world_pe), lane(ctx_lane) {}
};

inline Target ctx_target(shmem_ctx_t ctx, int pe, const char *routine) {
  const int world = ctx_world_pe(ctx, pe, routine);
  return {world, ctx->lane};
}

}  // namespace hoshmem
