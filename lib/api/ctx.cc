// Communication contexts: create, destroy, get_team, and the 1.6 session hints. The ctx_ forms of
// RMA, AMO and ordering are next to their default-context twins (rma.cc, amo.cc, ordering.cc).
#include "lib/api/api.h"
#include "lib/core/team.h"

using namespace hoshmem;

extern "C" {

int pshmem_ctx_create(long options, shmem_ctx_t *ctx) {
  if (!rt.initialized) fatal(HOSHMEM_ROUTINE, "called before shmem_init");
  return ctx_create(&world_team(), options, ctx, HOSHMEM_ROUTINE);
}

int pshmem_team_create_ctx(shmem_team_t team, long options, shmem_ctx_t *ctx) {
  if (!rt.initialized) fatal(HOSHMEM_ROUTINE, "called before shmem_init");
  return ctx_create(team, options, ctx, HOSHMEM_ROUTINE);
}

void pshmem_ctx_destroy(shmem_ctx_t ctx) { ctx_destroy(ctx, HOSHMEM_ROUTINE); }

int pshmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t *team) {
  if (!team) return -1;
  if (!ctx) {
    *team = SHMEM_TEAM_INVALID;
    return -1;
  }
  if (rt.debug && !ctx_is_live(ctx)) report_invalid_ctx(ctx, HOSHMEM_ROUTINE);
  *team = ctx->team;
  return 0;
}

// 1.6 sessions are hints: checked and recorded, never allowed to change completion or ordering.
void pshmem_ctx_session_start(shmem_ctx_t ctx, long options,
                              const shmem_ctx_session_config_t *config, long config_mask) {
  if (!ctx) return;
  if (rt.debug && !ctx_is_live(ctx)) report_invalid_ctx(ctx, HOSHMEM_ROUTINE);
  if (options & ~SHMEM_CTX_SESSION_BATCH)
    fatal(HOSHMEM_ROUTINE, "unknown session option bits 0x%lx", options & ~SHMEM_CTX_SESSION_BATCH);
  if (config_mask & ~SHMEM_CTX_SESSION_TOTAL_OPS)
    fatal(HOSHMEM_ROUTINE, "unknown session config_mask bits 0x%lx",
          config_mask & ~SHMEM_CTX_SESSION_TOTAL_OPS);
  if (config_mask && !config) fatal(HOSHMEM_ROUTINE, "config is NULL with a nonzero config_mask");
  ctx->session_options = ctx->in_session ? (ctx->session_options | options) : options;
  if (config_mask & SHMEM_CTX_SESSION_TOTAL_OPS) ctx->session_total_ops = config->total_ops;
  ctx->in_session = true;
}

void pshmem_ctx_session_stop(shmem_ctx_t ctx) {
  if (!ctx) return;
  if (rt.debug && !ctx_is_live(ctx)) report_invalid_ctx(ctx, HOSHMEM_ROUTINE);
  ctx->in_session = false;
  ctx->session_options = 0;
  ctx->session_total_ops = SIZE_MAX;
}

}  // extern "C"

HOSHMEM_ALIAS(shmem_ctx_create);
HOSHMEM_ALIAS(shmem_team_create_ctx);
HOSHMEM_ALIAS(shmem_ctx_destroy);
HOSHMEM_ALIAS(shmem_ctx_get_team);
HOSHMEM_ALIAS(shmem_ctx_session_start);
HOSHMEM_ALIAS(shmem_ctx_session_stop);
