/* OpenSHMEM benchmark program: the barrier suite (see ../suites/barrier.h). Usage: oshrun -np N barrier [-q] */
#include "../common/backend_shmem.h"
#include "../suites/barrier.h"

int main(int argc, char **argv) {
  bench_options(argc, argv);
  bk_init();
  suite_barrier();
  return bk_finish(bench_exit_code());
}
