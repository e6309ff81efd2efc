/* OpenSHMEM benchmark program: the putget suite (see ../suites/putget.h). Usage: oshrun -np N putget [-q] */
#include "../common/backend_shmem.h"
#include "../suites/putget.h"

int main(int argc, char **argv) {
  bench_options(argc, argv);
  bk_init();
  suite_putget();
  return bk_finish(bench_exit_code());
}
