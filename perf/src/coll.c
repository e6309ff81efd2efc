/* OpenSHMEM benchmark program: the collectives suite (see ../suites/coll.h).
 * Usage: oshrun -np N coll [-q]; build with -DBK_AS_<family>=0/1 -DBK_TEAM_<family>=0/1 to pick
 * the routine families (see ../common/backend_shmem_coll.h; compare.sh probes them). */
#include "../common/backend_shmem_coll.h"
#include "../suites/coll.h"

int main(int argc, char **argv) {
  bench_options(argc, argv);
  bk_init();
  suite_coll();
  return bk_finish(bench_exit_code());
}
