/* The "limit" program: runs the benchmark suites with no communication library, between processes
 * that share one anonymous mapping (see backend_limit.h). Prints the same result lines as the
 * OpenSHMEM programs, so compare.sh can show what the hardware allows next to each library.
 * Usage: limit [-q] [-n NPES] {putget|amo|barrier|gups|coll} */
#include "backend_limit.h"
#include "backend_limit_coll.h"
#include "../suites/amo.h"
#include "../suites/barrier.h"
#include "../suites/coll.h"
#include "../suites/gups.h"
#include "../suites/putget.h"

int main(int argc, char **argv) {
  int npes = 2;
  const char *suite = NULL;
  bench_options(argc, argv);
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
      npes = atoi(argv[++i]);
    else if (argv[i][0] != '-')
      suite = argv[i];
  }
  void (*run)(void) = NULL;
  if (suite && strcmp(suite, "putget") == 0) run = suite_putget;
  if (suite && strcmp(suite, "amo") == 0) run = suite_amo;
  if (suite && strcmp(suite, "barrier") == 0) run = suite_barrier;
  if (suite && strcmp(suite, "gups") == 0) run = suite_gups;
  if (suite && strcmp(suite, "coll") == 0) run = suite_coll;
  if (!run) {
    fprintf(stderr, "usage: %s [-q] [-n NPES] {putget|amo|barrier|gups|coll}\n", argv[0]);
    return 2;
  }
  bk_init_n(npes);
  run();
  return bk_finish(bench_exit_code());
}
