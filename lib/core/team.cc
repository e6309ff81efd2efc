#include "lib/core/team.h"

#include <algorithm>
#include <mutex>

#include "lib/coll/team_exchange.h"

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

static_assert(shm::kTeamSlots == 64, "the used-slot bitmap is one 64-bit word");

// Team management state of this PE. Team creation is collective and the spec requires every PE to
// create teams in the same order, so holding one lock across a whole creation cannot deadlock.
std::recursive_mutex g_mutex;
uint64_t g_used_slots = 0;                // bit s: slot s belongs to a team this PE is in
std::vector<hoshmem_team *> g_user_teams;  // teams created by splits, alive on this PE

// Bitwise OR of `words` over all members of `team`, result on every member (lib/coll/team_exchange.h).
void allreduce_or(hoshmem_team &team, uint64_t *words, size_t n) {
  coll::allreduce_or(team.view, team.mgmt_epoch, words, n);
}

// Lowest slot not set in `used`, or -1.
// Slots no split team may take: WORLD (0), SHARED (1), and the one the deprecated active-set
// collectives run in (kActiveSetSlot).
constexpr uint64_t kReservedSlots = 0b11 | (uint64_t{1} << kActiveSetSlot);

int lowest_free(uint64_t used) {
  used |= kReservedSlots;
  return ~used ? __builtin_ctzll(~used) : -1;
}

void set_up(hoshmem_team &team, std::vector<int> members, int slot, bool predefined) {
  team.members = std::move(members);
  team.view.size = static_cast<int>(team.members.size());
  team.view.world = team.members.data();
  team.view.rank = -1;
  for (int i = 0; i < team.view.size; ++i)
    if (team.members[i] == rt.me) team.view.rank = i;
  team.view.slot = slot;
  team.view.control = rt.control;
  team.view.wait = &rt.wait;
  team.view.note_locality();
  team.predefined = predefined;
  team.mgmt_epoch = 0;
}

hoshmem_team *make_team(std::vector<int> members, int slot, const shmem_team_config_t *config,
                        long mask) {
  auto *team = new hoshmem_team;
  set_up(*team, std::move(members), slot, false);
  team->config_mask = mask & SHMEM_TEAM_NUM_CONTEXTS;
  if (team->config_mask) team->config.num_contexts = config->num_contexts;
  g_used_slots |= uint64_t{1} << slot;
  g_user_teams.push_back(team);
  return team;
}

// The parent must be a team this PE belongs to (undefined behaviour otherwise; reported under
// SHMEM_DEBUG, and always when this PE is not a member: it could not take part in the exchange).
void check_parent(hoshmem_team *parent, const char *routine) {
  check_team(parent, routine);
  if (parent->view.rank < 0) fatal(routine, "this PE is not a member of the parent team");
}

bool config_ok(const shmem_team_config_t *config, long mask) {
  if (mask & ~SHMEM_TEAM_NUM_CONTEXTS) return false;
  if (mask && (!config || config->num_contexts < 0)) return false;
  return true;
}

}  // namespace

hoshmem_team &world_team() { return g_world; }

void create_predefined_teams() {
  ThreadLock<std::recursive_mutex> guard(g_mutex);
  std::vector<int> all(rt.npes), local;
  for (int pe = 0; pe < rt.npes; ++pe) {
    all[pe] = pe;
    if (rt.control[pe]) local.push_back(pe);  // exactly the PEs shmem_ptr reaches
  }
  set_up(g_world, all, 0, true);
  set_up(g_shared, local, 1, true);
  g_used_slots = 0b11;
  g_default_ctx = hoshmem_ctx{&g_world, 0};
}

void destroy_all_teams() {
  ThreadLock<std::recursive_mutex> guard(g_mutex);
  // Contexts first (they point at their teams); then teams, no communication: the job is ending.
  for (hoshmem_team *team : g_user_teams) {
    while (!team->contexts.empty()) ctx_destroy(team->contexts.back(), "shmem_finalize");
    delete team;
  }
  g_user_teams.clear();
  while (!g_world.contexts.empty()) ctx_destroy(g_world.contexts.back(), "shmem_finalize");
  while (!g_shared.contexts.empty()) ctx_destroy(g_shared.contexts.back(), "shmem_finalize");
  g_world = hoshmem_team{};
  g_shared = hoshmem_team{};
  g_used_slots = 0;
}

void check_team(shmem_team_t team, const char *routine) {
  if (!rt.initialized) fatal(routine, "called before shmem_init");
  if (!rt.debug || !team || team == &g_world || team == &g_shared) return;
  ThreadLock<std::recursive_mutex> guard(g_mutex);
  if (std::find(g_user_teams.begin(), g_user_teams.end(), team) == g_user_teams.end())
    fatal(routine, "%p is not a team handle of this PE (destroyed, or never created)",
          static_cast<void *>(team));
}

void report_bad_team_pe(const hoshmem_team *team, int pe, const char *routine) {
  if (team == &g_world) report_bad_pe(pe, routine);
  fatal(routine, "PE %d is out of range [0, %d) of the context's team", pe, team->view.size);
}

int team_rank_of(const hoshmem_team *team, int world_pe) {
  if (team == &g_world) return world_pe >= 0 && world_pe < rt.npes ? world_pe : -1;
  auto it = std::find(team->members.begin(), team->members.end(), world_pe);
  return it == team->members.end() ? -1 : static_cast<int>(it - team->members.begin());
}

int team_split_strided(shmem_team_t parent, int start, int stride, int size,
                       const shmem_team_config_t *config, long config_mask,
                       shmem_team_t *new_team, const char *routine) {
  if (!new_team) fatal(routine, "new_team is NULL");
  *new_team = SHMEM_TEAM_INVALID;
  if (!parent) return -1;  // 1.6 erratum: nonzero on every PE that passes SHMEM_TEAM_INVALID
  check_parent(parent, routine);
  ThreadLock<std::recursive_mutex> guard(g_mutex);
  // The triplet is the same on every parent PE, so all of them reject a bad one alike.
  const int n = parent->view.size;
  const long last = start + static_cast<long>(size - 1) * stride;
  if (size < 1 || start < 0 || start >= n || (stride == 0 && size != 1) || last < 0 || last >= n ||
      !config_ok(config, config_mask))
    return -1;

  std::vector<int> members(size);
  int my_rank = -1;
  for (int i = 0; i < size; ++i) {
    const int parent_rank = start + i * stride;  // stride counts parent ranks, not world PEs
    members[i] = parent->members[parent_rank];
    if (parent_rank == parent->view.rank) my_rank = i;
  }
  // OR of the used slots of the new team's members; the other parent PEs contribute nothing.
  uint64_t used = my_rank >= 0 ? g_used_slots : 0;
  allreduce_or(*parent, &used, 1);
  const int slot = lowest_free(used);
  if (slot < 0) return -1;  // every PE saw the same bitmap: all fail together
  if (my_rank >= 0) *new_team = make_team(std::move(members), slot, config, config_mask);
  return 0;
}

int team_split_2d(shmem_team_t parent, int xrange, const shmem_team_config_t *xaxis_config,
                  long xaxis_mask, shmem_team_t *xaxis_team,
                  const shmem_team_config_t *yaxis_config, long yaxis_mask,
                  shmem_team_t *yaxis_team, const char *routine) {
  if (!xaxis_team || !yaxis_team) fatal(routine, "xaxis_team or yaxis_team is NULL");
  *xaxis_team = *yaxis_team = SHMEM_TEAM_INVALID;
  if (!parent) return -1;
  check_parent(parent, routine);
  ThreadLock<std::recursive_mutex> guard(g_mutex);
  const int n = parent->view.size;
  if (xrange < 1 || !config_ok(xaxis_config, xaxis_mask) || !config_ok(yaxis_config, yaxis_mask))
    return -1;
  if (xrange > n) xrange = n;
  const int yrange = (n + xrange - 1) / xrange;
  const int me = parent->view.rank, x = me % xrange, y = me / xrange;

  // Words 0..yrange-1: used slots of x-team (row) y; words yrange..: of y-team (column) x.
  std::vector<uint64_t> used(yrange + xrange, 0);
  used[y] = g_used_slots;
  used[yrange + x] = g_used_slots;
  allreduce_or(*parent, used.data(), used.size());

  // Rows take their lowest free slot; a column must also avoid the slots of the rows it crosses,
  // since each of its PEs is in one of them. Every PE computes all of it alike.
  std::vector<int> row_slot(yrange), column_slot(xrange);
  bool ok = true;
  for (int r = 0; r < yrange; ++r) ok &= (row_slot[r] = lowest_free(used[r])) >= 0;
  if (!ok) return -1;
  for (int c = 0; c < xrange; ++c) {
    uint64_t taken = used[yrange + c];
    for (int r = 0; r * xrange + c < n; ++r) taken |= uint64_t{1} << row_slot[r];
    ok &= (column_slot[c] = lowest_free(taken)) >= 0;
  }
  if (!ok) return -1;

  std::vector<int> row, column;
  for (int i = y * xrange; i < std::min(n, (y + 1) * xrange); ++i) row.push_back(parent->members[i]);
  for (int i = x; i < n; i += xrange) column.push_back(parent->members[i]);
  *xaxis_team = make_team(std::move(row), row_slot[y], xaxis_config, xaxis_mask);
  *yaxis_team = make_team(std::move(column), column_slot[x], yaxis_config, yaxis_mask);
  return 0;
}

void team_destroy(shmem_team_t team, const char *routine) {
  if (!team) return;  // destroying SHMEM_TEAM_INVALID does nothing
  check_team(team, routine);
  if (team->predefined)
    fatal(routine, "%s is a predefined team and cannot be destroyed",
          team == &g_world ? "SHMEM_TEAM_WORLD" : "SHMEM_TEAM_SHARED");
  ThreadLock<std::recursive_mutex> guard(g_mutex);
  // Its contexts go with it (each quiets first).
  while (!team->contexts.empty()) ctx_destroy(team->contexts.back(), routine);
  // Zero my copy of the slot once nobody writes into it any more, so the next team given it
  // starts from clean counts, then free it.
  coll::retire_slot(team->view, team->mgmt_epoch);
  g_used_slots &= ~(uint64_t{1} << team->view.slot);
  g_user_teams.erase(std::find(g_user_teams.begin(), g_user_teams.end(), team));
  delete team;
}

}  // namespace hoshmem
