/* OpenSHMEM benchmark program: the amo suite (see ../suites/amo.h). Usage: oshrun -np N amo [-q] */
#include "../common/backend_shmem.h"
#include "../suites/amo.h"

int main(int argc, char **argv) {
  bench_options(argc, argv);
  bk_init();
  suite_amo();
  return bk_finish(bench_exit_code());
}
