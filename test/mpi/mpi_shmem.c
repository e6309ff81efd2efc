/* MPI and OpenSHMEM in one program, under Open MPI's mpirun (test/mpi/run_matrix.sh runs it).
 *
 *   mpi_shmem INIT FINALIZE END PIDDIR [MARKER]
 *     INIT      mpi-first    MPI_Init, then shmem_init
 *               shmem-first  shmem_init, then MPI_Init
 *     FINALIZE  shmem-first  shmem_finalize, then MPI_Finalize
 *               mpi-first    MPI_Finalize, then shmem_finalize
 *               implicit     MPI_Finalize only: shmem finalizes at exit
 *     END       normal       the work, then the finalizes; every rank prints "done rank R of N"
 *               mpi-abort    after the work the last rank calls MPI_Abort(MPI_COMM_WORLD, 7)
 *                            while the others wait in shmem_barrier_all
 *               global-exit  after the work the last rank calls shmem_global_exit(7) while the
 *                            others wait in MPI_Barrier
 *     PIDDIR    each rank writes its PID to PIDDIR/pid.RANK right after both inits; the rank
 *               that ends the job writes the time of its call (CLOCK_REALTIME) to PIDDIR/abort
 *     MARKER    ignored: a unique word on the command line to find leftover processes by
 *
 * Every rank checks both libraries against each other: MPI rank == shmem_my_pe, MPI_Comm_size ==
 * shmem_n_pes, values put with shmem and read after MPI_Barrier + shmem_barrier_all, the sum of
 * shmem_atomic_fetch_inc results through MPI_Allreduce, shmem_long_sum_reduce against
 * MPI_Allreduce. A failed check prints "FAIL rank R: ..." and ends the job with MPI_Abort(3). */
#include <mpi.h>
#include <shmem.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank = -1, size = 0;

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "FAIL rank %d: ", rank);            \
      fprintf(stderr, __VA_ARGS__);                       \
      fprintf(stderr, "\n");                              \
      fflush(stderr);                                     \
      MPI_Abort(MPI_COMM_WORLD, 3);                       \
    }                                                     \
  } while (0)

static void usage(void) {
  fprintf(stderr, "usage: mpi_shmem mpi-first|shmem-first shmem-first|mpi-first|implicit "
                  "normal|mpi-abort|global-exit PIDDIR [MARKER]\n");
  exit(2);
}

static long counter;     /* on PE 0: fetch-inc target */
static long from_left;   /* the left neighbour puts its value here */
static long reduce_src, reduce_dst;

static void work(int round) {
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  const long mine = 1000L * (rank + 1) + round;

  /* A put to the right neighbour, seen after MPI_Barrier + shmem_barrier_all. */
  shmem_long_p(&from_left, mine, right);
  MPI_Barrier(MPI_COMM_WORLD);
  shmem_barrier_all();
  CHECK(from_left == 1000L * (left + 1) + round, "round %d: from_left %ld, expected %ld", round,
        from_left, 1000L * (left + 1) + round);

  /* Fetch-inc on PE 0: the results are 0..size-1 in some order, their sum known. */
  long fetched = shmem_long_atomic_fetch_inc(&counter, 0);
  CHECK(fetched >= (long)round * size && fetched < (long)(round + 1) * size,
        "round %d: fetch_inc gave %ld", round, fetched);
  long sum = 0;
  CHECK(MPI_Allreduce(&fetched, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
        "MPI_Allreduce failed");
  const long base = (long)round * size;
  CHECK(sum == base * size + (long)size * (size - 1) / 2,
        "round %d: MPI_Allreduce of the fetched values %ld, expected %ld", round, sum,
        base * size + (long)size * (size - 1) / 2);
  shmem_barrier_all();
  if (rank == 0) CHECK(counter == (long)(round + 1) * size, "counter %ld", counter);

  /* A value read with shmem_g from the left neighbour, summed by MPI and by shmem. */
  long got = shmem_long_g(&from_left, left);  /* left's from_left: the value left-of-left put */
  const int ll = (left + size - 1) % size;
  CHECK(got == 1000L * (ll + 1) + round, "shmem_g from %d: %ld", left, got);
  reduce_src = got;
  long mpi_sum = 0;
  MPI_Allreduce(&got, &mpi_sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  CHECK(shmem_long_sum_reduce(SHMEM_TEAM_WORLD, &reduce_dst, &reduce_src, 1) == 0,
        "shmem_long_sum_reduce failed");
  CHECK(reduce_dst == mpi_sum, "shmem sum %ld, MPI sum %ld", reduce_dst, mpi_sum);
  long expected = 0;
  for (int r = 0; r < size; r++) expected += 1000L * (r + 1) + round;
  CHECK(mpi_sum == expected, "sum %ld, expected %ld", mpi_sum, expected);
  shmem_barrier_all(); /* from_left is reused in the next round */
}

int main(int argc, char **argv) {
  if (argc < 5) usage();
  const char *init = argv[1], *fin = argv[2], *end = argv[3], *piddir = argv[4];
  if (strcmp(init, "mpi-first") && strcmp(init, "shmem-first")) usage();
  if (strcmp(fin, "shmem-first") && strcmp(fin, "mpi-first") && strcmp(fin, "implicit")) usage();
  if (strcmp(end, "normal") && strcmp(end, "mpi-abort") && strcmp(end, "global-exit")) usage();

  if (!strcmp(init, "mpi-first")) {
    MPI_Init(&argc, &argv);
    shmem_init();
  } else {
    shmem_init();
    MPI_Init(&argc, &argv);
  }
  int initialized = 0;
  MPI_Initialized(&initialized);
  int shmem_up = 0;
  shmem_query_initialized(&shmem_up);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CHECK(initialized && shmem_up, "MPI_Initialized %d, shmem_query_initialized %d", initialized,
        shmem_up);
  CHECK(rank == shmem_my_pe(), "MPI rank %d, shmem_my_pe %d", rank, shmem_my_pe());
  CHECK(size == shmem_n_pes(), "MPI_Comm_size %d, shmem_n_pes %d", size, shmem_n_pes());

  char path[4096];
  snprintf(path, sizeof path, "%s/pid.%d", piddir, rank);
  FILE *f = fopen(path, "w");
  CHECK(f != NULL, "cannot write %s", path);
  fprintf(f, "%d\n", (int)getpid());
  fclose(f);

  for (int round = 0; round < 3; round++) work(round);
  printf("ok rank %d of %d: %s init, pid %d\n", rank, size, init, (int)getpid());
  fflush(stdout);

  if (strcmp(end, "normal")) {
    /* Every PID is written before anyone ends the job. */
    MPI_Barrier(MPI_COMM_WORLD);
    shmem_barrier_all();
    const int mpi_abort = !strcmp(end, "mpi-abort");
    if (rank == size - 1) {
      usleep(500 * 1000); /* the others are waiting by now */
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      /* The time of the call, for the script: a file, as the launcher may not pass on the
       * output of a process it kills. */
      snprintf(path, sizeof path, "%s/abort", piddir);
      f = fopen(path, "w");
      CHECK(f != NULL, "cannot write %s", path);
      fprintf(f, "%ld.%09ld\n", (long)ts.tv_sec, ts.tv_nsec);
      fclose(f);
      fprintf(stderr, "rank %d: calling %s(7)\n", rank,
              mpi_abort ? "MPI_Abort" : "shmem_global_exit");
      fflush(stderr);
      if (mpi_abort) MPI_Abort(MPI_COMM_WORLD, 7);
      else shmem_global_exit(7);
      fprintf(stderr, "FAIL rank %d: returned from the abort\n", rank);
      return 4;
    }
    if (mpi_abort) shmem_barrier_all();
    else MPI_Barrier(MPI_COMM_WORLD);
    fprintf(stderr, "FAIL rank %d: the barrier completed although rank %d ended the job\n", rank,
            size - 1);
    return 5;
  }

  if (!strcmp(fin, "shmem-first")) {
    shmem_finalize();
    MPI_Finalize();
  } else if (!strcmp(fin, "mpi-first")) {
    MPI_Finalize();
    shmem_finalize();
  } else {
    MPI_Finalize();
  }
  int mpi_done = 0;
  MPI_Finalized(&mpi_done);
  shmem_query_initialized(&shmem_up);
  if (!mpi_done || shmem_up != !strcmp(fin, "implicit")) {
    fprintf(stderr, "FAIL rank %d: after the finalizes MPI_Finalized %d, shmem initialized %d\n",
            rank, mpi_done, shmem_up);
    return 6;
  }
  printf("done rank %d of %d: %s finalize\n", rank, size, fin);
  fflush(stdout);
  return 0;
}
