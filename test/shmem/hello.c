/* Minimal program: init, barrier, finalize. Used with bad or informative environments. */
#include "shtest.h"

int main(void) {
  shtest_init();
  shmem_barrier_all();
  shtest_done("hello");
  return 0;
}
