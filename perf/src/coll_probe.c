/* Compile probe for perf/compare.sh: builds (and links) only if the library provides the
 * collective family named by -DPROBE_<family> (see common/backend_shmem_coll.h). Never run. */
#include <shmem.h>

static long ps[64];
static long lw[64], ls[8], ld[8];
static double dw[64], dsrc[8], ddst[8];

int main(void) {
  shmem_init();
  int np = shmem_n_pes();
  (void)lw; (void)ls; (void)ld; (void)dw; (void)dsrc; (void)ddst; (void)np;
#if defined(PROBE_AS_BARRIER)
  shmem_barrier(0, 0, np, ps);
#elif defined(PROBE_AS_SYNC)
  shmem_sync(0, 0, np, ps);
#elif defined(PROBE_AS_BCAST)
  shmem_broadcast64(ld, ls, 1, 0, 0, 0, np, ps);
#elif defined(PROBE_AS_REDUCE)
  shmem_long_sum_to_all(ld, ls, 1, 0, 0, np, lw, ps);
  shmem_double_sum_to_all(ddst, dsrc, 1, 0, 0, np, dw, ps);
  shmem_long_xor_to_all(ld, ls, 1, 0, 0, np, lw, ps);
#elif defined(PROBE_AS_ALLTOALL)
  shmem_alltoall64(ld, ls, 1, 0, 0, np, ps);
#elif defined(PROBE_AS_FCOLLECT)
  shmem_fcollect64(ld, ls, 1, 0, 0, np, ps);
#elif defined(PROBE_AS_COLLECT)
  shmem_collect64(ld, ls, 1, 0, 0, np, ps);
#elif defined(PROBE_TEAM_SYNC)
  shmem_team_sync(SHMEM_TEAM_WORLD);
#elif defined(PROBE_TEAM_BCAST)
  shmem_broadcastmem(SHMEM_TEAM_WORLD, ld, ls, 8, 0);
#elif defined(PROBE_TEAM_REDUCE)
  shmem_long_sum_reduce(SHMEM_TEAM_WORLD, ld, ls, 1);
  shmem_double_sum_reduce(SHMEM_TEAM_WORLD, ddst, dsrc, 1);
  shmem_ulong_xor_reduce(SHMEM_TEAM_WORLD, (unsigned long *)ld, (const unsigned long *)ls, 1);
#elif defined(PROBE_TEAM_ALLTOALL)
  shmem_alltoallmem(SHMEM_TEAM_WORLD, ld, ls, 8);
#elif defined(PROBE_TEAM_FCOLLECT)
  shmem_fcollectmem(SHMEM_TEAM_WORLD, ld, ls, 8);
#elif defined(PROBE_TEAM_COLLECT)
  shmem_collectmem(SHMEM_TEAM_WORLD, ld, ls, 8);
#else
#error "define one PROBE_<family>"
#endif
  shmem_finalize();
  return 0;
}
