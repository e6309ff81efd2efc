/* OpenSHMEM benchmark program: the gups suite (see ../suites/gups.h). Usage: oshrun -np N gups [-q] */
#include "../common/backend_shmem.h"
#include "../suites/gups.h"

int main(int argc, char **argv) {
  bench_options(argc, argv);
  bk_init();
  suite_gups();
  return bk_finish(bench_exit_code());
}
