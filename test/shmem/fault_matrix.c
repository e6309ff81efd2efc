/* One PE (the victim, the last) fails while the others are in the middle of something with it;
 * the job must end within seconds with one line naming the victim and a non-zero status, and no
 * PE left (BUILD runs every FAULT on one node and across nodes over RC, DC and UD). FAULT:
 *   amo_kill     SIGKILL while the others loop on fetching AMOs to it
 *   quiet_kill   SIGKILL while the others quiet with puts to it outstanding
 *   lock_kill    SIGKILL while it holds a lock the others wait for
 *   barrier_segv SIGSEGV while the others wait in a barrier
 *   wait_exit    shmem_global_exit(5) while the others wait for a word it never writes
 *   exit3        exit(3) without shmem_finalize while the others wait in a barrier */
#include <signal.h>

#include "shtest.h"

static long counter;
static long flag;
static long lock;

static void victim_fails(const char *fault) {
  shtest_sleep_ms(300); /* the others are inside their operation by now */
  if (strstr(fault, "_kill")) raise(SIGKILL);
  if (!strcmp(fault, "barrier_segv")) *(volatile int *)(uintptr_t)8 = 1; /* a real fault */
  if (!strcmp(fault, "wait_exit")) shmem_global_exit(5);
  if (!strcmp(fault, "exit3")) exit(3);
}

int main(void) {
  const char *fault = getenv("FAULT") ? getenv("FAULT") : "amo_kill";
  shtest_init();
  shtest_record_pid();
  const int victim = shtest_npes - 1;
  long *block = shmem_malloc(1 << 20);
  static char source[1 << 20];
  if (!strcmp(fault, "lock_kill") && shtest_me == victim) shmem_set_lock(&lock);
  shmem_barrier_all();
  if (shtest_me == victim) {
    victim_fails(fault);
    fprintf(stderr, "FAIL: unknown FAULT=%s\n", fault);
    shmem_global_exit(2);
  }
  /* the others, until the job is torn down */
  for (;;) {
    if (!strcmp(fault, "amo_kill"))
      (void)shmem_long_atomic_fetch_add(&counter, 1, victim);
    else if (!strcmp(fault, "quiet_kill")) {
      shmem_putmem_nbi(block, source, sizeof source, victim);
      shmem_quiet();
    } else if (!strcmp(fault, "lock_kill")) {
      shmem_set_lock(&lock);
      shmem_clear_lock(&lock);
    } else if (!strcmp(fault, "wait_exit")) {
      shmem_long_wait_until(&flag, SHMEM_CMP_NE, 0);
    } else {
      shmem_barrier_all();
    }
  }
}
