// Contexts: creation, destruction and handle checks. Intra-node every operation completes in its
// call, so there a context needs no queues of its own; it carries its team (PE translation),
// options, session hints, and its transport lane for PEs of other nodes. The per-team list lets team_destroy take the team's contexts with it.
#include <algorithm>
#include <atomic>
#include <mutex>

#include "lib/core/rdma.h"
#include "lib/core/team.h"

namespace hoshmem {
namespace {
// Context creation is not collective and may come from any thread.
std::mutex g_ctx_mutex;
std::vector<hoshmem_ctx *> g_live;  // every context created and not destroyed on this PE

constexpr long kCtxOptions = SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE;
}  // namespace

bool ctx_is_live(shmem_ctx_t ctx) {
  if (ctx == SHMEM_CTX_DEFAULT) return true;
  ThreadLock<std::mutex> guard(g_ctx_mutex);
  return std::find(g_live.begin(), g_live.end(), ctx) != g_live.end();
}

void report_invalid_ctx(shmem_ctx_t ctx, const char *routine) {
  if (!rt.initialized) fatal(routine, "called before shmem_init");
  if (!ctx) fatal(routine, "the context is SHMEM_CTX_INVALID");
  fatal(routine, "%p is not a context of this PE (destroyed, or never created)",
        static_cast<void *>(ctx));
}

int ctx_create(hoshmem_team *team, long options, shmem_ctx_t *ctx, const char *routine) {
  if (!ctx) fatal(routine, "ctx is NULL");
  *ctx = SHMEM_CTX_INVALID;
  if (!team) return -1;  // SHMEM_TEAM_INVALID: creation fails, the library stays usable
  check_team(team, routine);
  if (options & ~kCtxOptions) return -1;
  ThreadLock<std::mutex> guard(g_ctx_mutex);
  // A team created with SHMEM_TEAM_NUM_CONTEXTS asked for that many contexts: no more.
  if ((team->config_mask & SHMEM_TEAM_NUM_CONTEXTS) &&
      team->num_contexts >= team->config.num_contexts)
    return -1;
  auto *c = new hoshmem_ctx{team, options};
  c->creator = std::this_thread::get_id();
  // Across nodes (and for all-HW mode's atomics) a context has its own queue pairs, so threads
  // with their own contexts share no lock; one only its thread uses takes no lock at all.
  c->lane = rdma_open_lane((options & (SHMEM_CTX_PRIVATE | SHMEM_CTX_SERIALIZED)) ||
                           rt.thread_level != SHMEM_THREAD_MULTIPLE);
  team->contexts.push_back(c);
  ++team->num_contexts;
  g_live.push_back(c);
  *ctx = c;
  return 0;
}

void ctx_destroy(shmem_ctx_t ctx, const char *routine) {
  if (!ctx) return;  // SHMEM_CTX_INVALID: nothing to do
  if (ctx == SHMEM_CTX_DEFAULT) fatal(routine, "SHMEM_CTX_DEFAULT cannot be destroyed");
  ThreadLock<std::mutex> guard(g_ctx_mutex);
  auto it = std::find(g_live.begin(), g_live.end(), ctx);
  if (it == g_live.end()) report_invalid_ctx(ctx, routine);
  if (rt.debug && (ctx->options & SHMEM_CTX_PRIVATE) &&
      ctx->creator != std::this_thread::get_id())
    fatal(routine, "a SHMEM_CTX_PRIVATE context must be destroyed by the thread that created it");
  // Implicit quiet: intra-node puts and AMOs are complete already; make them visible. Its own
  // lane's operations complete as the lane closes.
  if (ctx->lane) rdma_close_lane(ctx->lane);
  else if (rt.remote_atomics) rt.remote_atomics->quiet();
  std::atomic_thread_fence(std::memory_order_seq_cst);
  g_live.erase(it);
  auto &list = ctx->team->contexts;
  list.erase(std::find(list.begin(), list.end(), ctx));
  --ctx->team->num_contexts;
  delete ctx;
}

}  // namespace hoshmem
