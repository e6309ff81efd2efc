/* Pitfalls 2 and 4: shmem_fence / shmem_ctx_fence order puts, nbi puts, AMOs and put-with-signal
 * to the same PE on the same context. Each round, on one context, a PE sends to its right
 * neighbour: a payload (blocking put, put_nbi, or put_signal without waiting), a non-fetching AMO,
 * then a fence, then a "flag" update of a different kind (AMO set, put_signal, or signal_add);
 * the neighbour waits only for the flag and must then see every earlier update of that round.
 * Contexts: the default one (plain and ctx_ forms), ctx_create with no options, PRIVATE and
 * SERIALIZED, and a context on a reversed copy of WORLD (PE numbers relative to that team).
 * Pitfall 4, second bullet: the put issued before the fence is delivered when a later
 * put_signal's signal is seen.
 *
 * What this can observe: a fence that fails to order on a context (an update issued before the
 * fence is missing when the flag arrives). What it cannot observe here: that fence does not
 * complete (intra-node every update is complete when its call returns), that nbi gets are not
 * ordered, and store ordering on NOSTORE contexts (both are about what the program may NOT rely
 * on). fence/quiet/pe_quiet on SHMEM_CTX_INVALID are checked to be harmless below and in ctx_team. */
#include "shtest.h"

#define NW 40

static long payload[NW];
static long amo_target;
static long flag;
static uint64_t sig;
static uint64_t ack;

static long pv(int pe, int i, long round) { return (long)shtest_val((uint64_t)pe, (uint64_t)i, (uint64_t)round); }

/* One round on `ctx`; `right` is the neighbour's PE number in the context's team, `left_world` the
 * world PE whose round lands here, `r` a round number unique over the whole run. */
static void round_on(shmem_ctx_t ctx, const char *name, int right, int left_world, long r) {
  static long src[NW]; /* nbi source: not reused before the ack proves delivery */
  for (int i = 0; i < NW; i++) src[i] = pv(shtest_me, i, r);
  const int how = (int)(r % 3), flag_kind = (int)((r / 3) % 3);
  if (how == 0)
    shmem_ctx_long_put(ctx, payload, src, NW, right);
  else if (how == 1)
    shmem_ctx_long_put_nbi(ctx, payload, src, NW, right);
  else /* put_signal whose signal nobody waits for: only the fence orders it before the flag */
    shmem_ctx_long_put_signal(ctx, payload, src, NW, &sig, 1, SHMEM_SIGNAL_ADD, right);
  shmem_ctx_long_atomic_add(ctx, &amo_target, 1, right);
  shmem_ctx_fence(ctx);
  SHT_REF_QUIET();
  if (flag_kind == 0)
    shmem_ctx_long_atomic_set(ctx, &flag, r, right);
  else if (flag_kind == 1) /* a one-element put_signal: its own data plus the signal */
    shmem_ctx_long_put_signal(ctx, &flag, &src[0], 0, &sig, 1000, SHMEM_SIGNAL_ADD, right);
  else
    shmem_ctx_signal_add(ctx, &sig, 1000, right);
  SHT_REF_QUIET();

  /* receiver side: wait only for the flag of this round */
  static long rounds_seen, sig_base, amo_seen;
  if (flag_kind == 0)
    shmem_long_wait_until(&flag, SHMEM_CMP_EQ, r);
  else
    shmem_signal_wait_until(&sig, SHMEM_CMP_GE, (uint64_t)(sig_base + 1000));
  for (int i = 0; i < NW; i++)
    CHECK(payload[i] == pv(left_world, i, r),
          "%s round %ld: %s issued before the fence not delivered when the %s after it was seen "
          "(element %d: expected %ld got %ld)",
          name, r, how == 0 ? "put" : how == 1 ? "put_nbi" : "put_signal",
          flag_kind == 0 ? "atomic_set" : flag_kind == 1 ? "put_signal" : "signal_add", i, pv(left_world, i, r),
          payload[i]);
  amo_seen++;
  CHECK(amo_target == amo_seen, "%s round %ld: atomic_add before the fence not done when the flag was seen (%ld, expected %ld)",
        name, r, amo_target, amo_seen);
  /* the signal word: +1 per put_signal payload, +1000 per signal flag */
  sig_base += (how == 2 ? 1 : 0) + (flag_kind != 0 ? 1000 : 0);
  CHECK_EQ_U("signal word after the round", (uint64_t)sig_base, shmem_signal_fetch(&sig));
  rounds_seen++;
  /* tell the left PE it may send the next round; wait until the right PE read this one */
  shmem_signal_add(&ack, 1, left_world);
  shmem_signal_wait_until(&ack, SHMEM_CMP_GE, (uint64_t)rounds_seen);
}

int main(void) {
  shtest_init();
  const int me = shtest_me, n = shtest_npes, right = (me + 1) % n, left = (me + n - 1) % n;
  shmem_team_t rev;
  CHECK_EQ_U("split reverse", 0, shmem_team_split_strided(SHMEM_TEAM_WORLD, n - 1, -1, n, NULL, 0, &rev));
  /* on the reversed team, world PE w is team PE n-1-w */
  const int right_rev = n - 1 - right;
  shmem_ctx_t c_plain, c_private, c_serial, c_team;
  CHECK_EQ_U("ctx_create(0)", 0, shmem_ctx_create(0, &c_plain));
  CHECK_EQ_U("ctx_create(PRIVATE)", 0, shmem_ctx_create(SHMEM_CTX_PRIVATE, &c_private));
  CHECK_EQ_U("ctx_create(SERIALIZED)", 0, shmem_ctx_create(SHMEM_CTX_SERIALIZED, &c_serial));
  CHECK_EQ_U("team_create_ctx(reversed world)", 0, shmem_team_create_ctx(rev, 0, &c_team));
  struct { shmem_ctx_t ctx; const char *name; int right; } ctxs[] = {
      {SHMEM_CTX_DEFAULT, "SHMEM_CTX_DEFAULT", right},
      {c_plain, "ctx_create(0)", right},
      {c_private, "ctx_create(PRIVATE)", right},
      {c_serial, "ctx_create(SERIALIZED)", right},
      {c_team, "team context (reversed world)", right_rev},
  };
  long r = 0;
  const long per = 9 * shtest_scaled(8); /* every (payload kind, flag kind) pair */
  for (size_t c = 0; c < sizeof ctxs / sizeof ctxs[0]; c++)
    for (long k = 0; k < per; k++) round_on(ctxs[c].ctx, ctxs[c].name, ctxs[c].right, left, ++r);

  /* the default context through the plain (non-ctx) routines: put, fence, flag */
  for (long k = 0; k < shtest_scaled(50); k++) {
    static long src[NW];
    ++r;
    for (int i = 0; i < NW; i++) src[i] = pv(me, i, r);
    shmem_long_put_nbi(payload, src, NW, right);
    shmem_fence();
    SHT_REF_QUIET();
    shmem_long_atomic_set(&flag, r, right);
    SHT_REF_QUIET();
    shmem_long_wait_until(&flag, SHMEM_CMP_EQ, r);
    for (int i = 0; i < NW; i++)
      CHECK(payload[i] == pv(left, i, r), "shmem_fence round %ld: put_nbi element %d not delivered", r, i);
    shmem_barrier_all(); /* the next round may overwrite the payload */
  }

  /* fence and quiet on SHMEM_CTX_INVALID do nothing (and must not fail) */
  shmem_ctx_fence(SHMEM_CTX_INVALID);
  shmem_ctx_quiet(SHMEM_CTX_INVALID);
  shmem_ctx_pe_quiet(SHMEM_CTX_INVALID, NULL, 0);

  shmem_ctx_destroy(c_team);
  shmem_ctx_destroy(c_serial);
  shmem_ctx_destroy(c_private);
  shmem_ctx_destroy(c_plain);
  shmem_team_destroy(rev);
  shtest_done("pitfall_2_fence_ctx");
  return 0;
}
