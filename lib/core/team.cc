#include "lib/core/team.h"

namespace hoshmem {
namespace {
hoshmem_team g_world, g_shared;
hoshmem_ctx g_default_ctx{&g_world, 0};
}  // namespace
}  // namespace hoshmem

// The predefined handles (link-time constants of the API).
extern "C" {
shmem_team_t SHMEM_TEAM_WORLD = &hoshmem::g_world;
shmem_team_t SHMEM_TEAM_SHARED = &hoshmem::g_shared;
shmem_ctx_t SHMEM_CTX_DEFAULT = &hoshmem::g_default_ctx;
}

namespace hoshmem {
namespace {

void set_up(hoshmem_team &team, std::vector<int> members, int slot) {
  team.members = std::move(members);
  team.view.size = static_cast<int>(team.members.size());
  team.view.world = team.members.data();
  team.view.rank = -1;
  for (int i = 0; i < team.view.size; ++i)
    if (team.members[i] == rt.me) team.view.rank = i;
  team.view.slot = slot;
  team.view.control = rt.control;
  team.view.wait = &rt.wait;
  team.predefined = true;
}
}  // namespace

hoshmem_team &world_team() { return g_world; }

void create_predefined_teams() {
  std::vector<int> all(rt.npes), local;
  for (int pe = 0; pe < rt.npes; ++pe) {
    all[pe] = pe;
    if (rt.control[pe]) local.push_back(pe);  // exactly the PEs shmem_ptr reaches
  }
  set_up(g_world, all, 0);
  set_up(g_shared, local, 1);
}

void destroy_all_teams() {
  g_world = hoshmem_team{};
  g_shared = hoshmem_team{};
}

}  // namespace hoshmem


