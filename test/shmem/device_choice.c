/* The nearest RDMA device: with several devices and HOSHMEM_DEVICE unset, each PE opens the
 * device nearest to the CPUs it is bound to.
 *
 * Before shmem_init each PE binds itself, as a launcher's binding would, to the CPU that
 * SHTEST_PE_CPUS lists for its launcher rank (PMIX_RANK, else PMI_RANK): "1,0" puts PE 0 on CPU 1
 * and PE 1 on CPU 0 (unset: no binding). Over the model with two devices on two NUMA nodes
 * (SOFTHCA_DEVICE_NUMA=0,1, SOFTHCA_NUMA_CPUS=0:1) the PEs then open different devices. Then
 * every PE puts to and does AMOs on every PE (from one device to the other), and checks the
 * results; with SHMEM_INFO=1 PE 0 says which device it opened and why (BUILD.bazel matches it). */
#define _GNU_SOURCE
#include <sched.h>

#include "shtest.h"

static long counter;
static long slots[64];

/* Binds this process as SHTEST_PE_CPUS says for its rank; exits with a clear line if it cannot. */
static void bind_as_listed(void) {
  const char *list = getenv("SHTEST_PE_CPUS");
  const char *rank_text = getenv("PMIX_RANK") ? getenv("PMIX_RANK") : getenv("PMI_RANK");
  if (!list || !*list) return;
  if (!rank_text) {
    fprintf(stderr, "device_choice: SHTEST_PE_CPUS set, but no PMIX_RANK or PMI_RANK\n");
    exit(1);
  }
  const int rank = atoi(rank_text);
  int cpus[64], n = 0;
  for (const char *p = list; n < 64;) {
    char *end;
    const long cpu = strtol(p, &end, 10);
    if (end == p) break;
    cpus[n++] = (int)cpu;
    if (*end != ',') break;
    p = end + 1;
  }
  if (n == 0) {
    fprintf(stderr, "device_choice: SHTEST_PE_CPUS=%s: expected CPU numbers separated by commas\n", list);
    exit(1);
  }
  const int cpu = cpus[rank % n];
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    fprintf(stderr, "device_choice: rank %d cannot be bound to CPU %d (this machine's CPUs?)\n", rank, cpu);
    exit(1);
  }
}

int main(void) {
  bind_as_listed();
  cpu_set_t before;
  sched_getaffinity(0, sizeof before, &before);
  shtest_init();
  const int me = shtest_me, npes = shtest_npes;
  cpu_set_t after;
  sched_getaffinity(0, sizeof after, &after);
  CHECK(CPU_EQUAL(&before, &after), "shmem_init changed the PE's CPU affinity");
  CHECK(npes <= 64, "at most 64 PEs: %d", npes);

  for (int pe = 0; pe < npes; pe++) {
    shmem_long_p(&slots[me], 1000L * me + pe, pe);
    shmem_long_atomic_add(&counter, me + 1, pe);
  }
  shmem_barrier_all();
  for (int pe = 0; pe < npes; pe++) CHECK_EQ_U("slot of each PE", 1000L * pe + me, slots[pe]);
  CHECK_EQ_U("sum of the adds", (long)npes * (npes + 1) / 2, counter);
  shmem_barrier_all();
  /* A fetching AMO and a get, from each PE to the next. */
  const int next = (me + 1) % npes;
  const long seen = shmem_long_atomic_fetch_inc(&counter, next);
  CHECK(seen >= (long)npes * (npes + 1) / 2, "fetch-inc on PE %d saw %ld", next, seen);
  CHECK_EQ_U("get of the next PE's slot", 1000L * me + next, shmem_long_g(&slots[me], next));
  shmem_barrier_all();
  CHECK_EQ_U("after one increment from the previous PE", (long)npes * (npes + 1) / 2 + 1, counter);
  shtest_done("device_choice");
  return 0;
}
