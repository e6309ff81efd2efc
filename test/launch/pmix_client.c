/* A small PMIx client for testing launchers (oshrun, mpirun): checks the job information a
 * launcher must provide, exchanges one value per rank through Put/Commit/Fence(collect)/Get,
 * uses fences as barriers, and can fail on purpose.
 *
 * usage: pmix_client [options] [marker...]
 *   --expect-size N     job size every size key must report
 *   --barriers K        extra fences without data collection (default 3)
 *   --crash R           rank R raises SIGSEGV before the data fence
 *   --exit R CODE       rank R exits with CODE before the data fence
 *   --abort R CODE      rank R calls PMIx_Abort(CODE) before the data fence
 *   --abort-msg TEXT    message passed to PMIx_Abort (default "pmix_client aborting on purpose")
 *   --no-finalize R     rank R exits 0 before the data fence without PMIx_Finalize
 *   --others-sleep      with a failure option, the other ranks sleep instead of fencing
 *   --sleep S           every rank sleeps S seconds before the data fence
 *   --ignore-term       ignore SIGTERM (the launcher must escalate to SIGKILL)
 *   --print-affinity    print "affinity rank R cpus a,b,..."
 *   --print-tmpdir      print "tmpdir DIR" (the PMIx server's directory, from the environment)
 *   --wait-file PATH    every rank waits until PATH exists before the data fence
 *   --exit-early R SYNC rank R exits 0 before PMIx_Init (rank from PMIX_RANK); with SYNC a file
 *                       path (not "-"), rank R writes its PID there and the other ranks wait until
 *                       the launcher has reaped it before they call PMIx_Init
 *   --intrude CODE      act as an intruder: PMIx_Init with whatever PMIX_* variables it was given;
 *                       if that succeeds print "intruder joined as rank R" and PMIx_Abort(CODE),
 *                       else print "intruder refused: ERROR" and exit 3
 * Other arguments are ignored (tests use a unique marker to find leftover processes).
 * Prints "ok rank R size N" on success; on a failed check prints "FAIL rank R: ..." and exits 1. */
#define _GNU_SOURCE
#include <pmix.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pmix_proc_t me;

#define CHECK(cond, ...)                                    \
  do {                                                      \
    if (!(cond)) {                                          \
      fprintf(stderr, "FAIL rank %u: ", (unsigned)me.rank); \
      fprintf(stderr, __VA_ARGS__);                         \
      fprintf(stderr, "\n");                                \
      exit(1);                                              \
    }                                                       \
  } while (0)

static pmix_value_t *get(const pmix_proc_t *proc, const char *key) {
  pmix_value_t *value = NULL;
  pmix_status_t rc = PMIx_Get(proc, key, NULL, 0, &value);
  CHECK(rc == PMIX_SUCCESS && value, "PMIx_Get(rank %d, %s): %s", (int)proc->rank, key,
        PMIx_Error_string(rc));
  return value;
}

/* Size-like keys are uint32 from every launcher we know; accept any unsigned width. */
static unsigned long get_unsigned(const pmix_proc_t *proc, const char *key) {
  pmix_value_t *v = get(proc, key);
  unsigned long out = 0;
  switch (v->type) {
    case PMIX_UINT32: out = v->data.uint32; break;
    case PMIX_UINT16: out = v->data.uint16; break;
    case PMIX_UINT64: out = v->data.uint64; break;
    case PMIX_PROC_RANK: out = v->data.rank; break;
    case PMIX_SIZE: out = v->data.size; break;
    default: CHECK(0, "%s has unexpected type %s", key, PMIx_Data_type_string(v->type));
  }
  PMIX_VALUE_RELEASE(v);
  return out;
}

static char *get_string(const pmix_proc_t *proc, const char *key) {
  pmix_value_t *v = get(proc, key);
  CHECK(v->type == PMIX_STRING, "%s has type %s, expected string", key, PMIx_Data_type_string(v->type));
  char *out = strdup(v->data.string);
  PMIX_VALUE_RELEASE(v);
  return out;
}

static void fence(int collect) {
  pmix_info_t info;
  bool flag = collect != 0;
  PMIX_INFO_LOAD(&info, PMIX_COLLECT_DATA, &flag, PMIX_BOOL);
  pmix_status_t rc = PMIx_Fence(NULL, 0, &info, 1);
  PMIX_INFO_DESTRUCT(&info);
  CHECK(rc == PMIX_SUCCESS, "PMIx_Fence(collect=%d): %s", collect, PMIx_Error_string(rc));
}

static void put_and_check_all(const char *key, unsigned size, unsigned long salt) {
  pmix_value_t value;
  unsigned long mine = (unsigned long)me.rank * 1000003UL + salt;
  PMIX_VALUE_LOAD(&value, &mine, PMIX_UINT64);
  CHECK(PMIx_Put(PMIX_GLOBAL, key, &value) == PMIX_SUCCESS, "PMIx_Put(%s)", key);
  PMIX_VALUE_DESTRUCT(&value);
  CHECK(PMIx_Commit() == PMIX_SUCCESS, "PMIx_Commit");
  fence(1);
  for (unsigned r = 0; r < size; ++r) {
    pmix_proc_t peer;
    PMIX_PROC_LOAD(&peer, me.nspace, r);
    pmix_value_t *v = get(&peer, key);
    CHECK(v->type == PMIX_UINT64 && v->data.uint64 == (unsigned long)r * 1000003UL + salt,
          "%s of rank %u is wrong", key, r);
    PMIX_VALUE_RELEASE(v);
  }
}

static void wait_for_file(const char *path) {
  struct stat st;
  while (stat(path, &st) != 0) usleep(20000);
}

/* --exit-early: runs before PMIx_Init, so the rank comes from the launcher's environment. */
static void exit_early(long early_rank, const char *sync) {
  const char *env = getenv("PMIX_RANK");
  const long rank = env ? atol(env) : -1;
  const int synced = strcmp(sync, "-") != 0;
  if (rank == early_rank) {
    if (synced) { /* write-then-rename: the others never read a partial PID */
      char tmp[4096];
      snprintf(tmp, sizeof tmp, "%s.tmp", sync);
      FILE *f = fopen(tmp, "w");
      if (f) {
        fprintf(f, "%d\n", (int)getpid());
        fclose(f);
        rename(tmp, sync);
      }
    }
    exit(0);
  }
  if (!synced) return;
  wait_for_file(sync);
  int pid = 0;
  FILE *f = fopen(sync, "r");
  if (f) {
    if (fscanf(f, "%d", &pid) != 1) pid = 0;
    fclose(f);
  }
  /* /proc/PID stays while the early rank is a zombie: gone means the launcher reaped it. */
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/%d", pid);
  struct stat st;
  while (pid > 0 && stat(proc, &st) == 0) usleep(20000);
}

static int intrude(int code) {
  pmix_proc_t self;
  pmix_status_t rc = PMIx_Init(&self, NULL, 0);
  if (rc != PMIX_SUCCESS) {
    printf("intruder refused: %s\n", PMIx_Error_string(rc));
    return 3;
  }
  printf("intruder joined as rank %u\n", (unsigned)self.rank);
  fflush(stdout);
  PMIx_Abort(code, "an intruder ended this job", NULL, 0);
  return 4;
}

static void print_affinity(void) {
  cpu_set_t cpus;
  CHECK(sched_getaffinity(0, sizeof cpus, &cpus) == 0, "sched_getaffinity");
  char list[1024] = "";
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &cpus)) continue;
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", list[0] ? "," : "", c);
  }
  printf("affinity rank %u cpus %s\n", (unsigned)me.rank, list);
}

int main(int argc, char **argv) {
  long expect_size = -1, barriers = 3;
  long crash = -1, exit_rank = -1, exit_code = 0, abort_rank = -1, abort_code = 0, no_finalize = -1;
  long sleep_seconds = 0;
  const char *abort_msg = "pmix_client aborting on purpose";
  int others_sleep = 0, show_affinity = 0, show_tmpdir = 0;
  const char *wait_file = NULL, *early_sync = "-";
  long early_rank = -1, intrude_code = -1;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--expect-size") && i + 1 < argc) expect_size = atol(argv[++i]);
    else if (!strcmp(argv[i], "--barriers") && i + 1 < argc) barriers = atol(argv[++i]);
    else if (!strcmp(argv[i], "--crash") && i + 1 < argc) crash = atol(argv[++i]);
    else if (!strcmp(argv[i], "--exit") && i + 2 < argc) { exit_rank = atol(argv[++i]); exit_code = atol(argv[++i]); }
    else if (!strcmp(argv[i], "--abort") && i + 2 < argc) { abort_rank = atol(argv[++i]); abort_code = atol(argv[++i]); }
    else if (!strcmp(argv[i], "--abort-msg") && i + 1 < argc) abort_msg = argv[++i];
    else if (!strcmp(argv[i], "--no-finalize") && i + 1 < argc) no_finalize = atol(argv[++i]);
    else if (!strcmp(argv[i], "--others-sleep")) others_sleep = 1;
    else if (!strcmp(argv[i], "--sleep") && i + 1 < argc) sleep_seconds = atol(argv[++i]);
    else if (!strcmp(argv[i], "--ignore-term")) signal(SIGTERM, SIG_IGN);
    else if (!strcmp(argv[i], "--print-affinity")) show_affinity = 1;
    else if (!strcmp(argv[i], "--print-tmpdir")) show_tmpdir = 1;
    else if (!strcmp(argv[i], "--wait-file") && i + 1 < argc) wait_file = argv[++i];
    else if (!strcmp(argv[i], "--exit-early") && i + 2 < argc) { early_rank = atol(argv[++i]); early_sync = argv[++i]; }
    else if (!strcmp(argv[i], "--intrude") && i + 1 < argc) intrude_code = atol(argv[++i]);
  }
  if (intrude_code >= 0) return intrude((int)intrude_code);
  if (early_rank >= 0) exit_early(early_rank, early_sync);

  pmix_status_t rc = PMIx_Init(&me, NULL, 0);
  if (rc != PMIX_SUCCESS) {
    fprintf(stderr, "FAIL: PMIx_Init: %s\n", PMIx_Error_string(rc));
    return 1;
  }
  const long rank = (long)me.rank;
  pmix_proc_t job;
  PMIX_PROC_LOAD(&job, me.nspace, PMIX_RANK_WILDCARD);

  /* Job-level information. */
  unsigned size = (unsigned)get_unsigned(&job, PMIX_JOB_SIZE);
  CHECK(expect_size < 0 || size == (unsigned)expect_size, "PMIX_JOB_SIZE %u, expected %ld", size, expect_size);
  CHECK(get_unsigned(&job, PMIX_UNIV_SIZE) == size, "PMIX_UNIV_SIZE differs from PMIX_JOB_SIZE");
  CHECK(get_unsigned(&job, PMIX_LOCAL_SIZE) == size, "PMIX_LOCAL_SIZE differs (single node)");
  CHECK(get_unsigned(&job, PMIX_NUM_NODES) == 1, "PMIX_NUM_NODES is not 1");
  char *peers = get_string(&job, PMIX_LOCAL_PEERS);
  char expected_peers[8192] = "";
  for (unsigned r = 0; r < size && strlen(expected_peers) < sizeof expected_peers - 16; ++r)
    snprintf(expected_peers + strlen(expected_peers), 16, "%s%u", r ? "," : "", r);
  CHECK(strcmp(peers, expected_peers) == 0, "PMIX_LOCAL_PEERS '%s', expected '%s'", peers, expected_peers);
  free(peers);
  char *jobid = get_string(&job, PMIX_JOBID);
  CHECK(jobid[0] != '\0', "empty PMIX_JOBID");
  free(jobid);

  /* Per-process information (own rank, and the last rank's as seen from here). */
  CHECK(rank >= 0 && (unsigned)rank < size, "rank %ld out of range", rank);
  CHECK(get_unsigned(&me, PMIX_LOCAL_RANK) == (unsigned long)rank, "PMIX_LOCAL_RANK differs (single node)");
  CHECK(get_unsigned(&me, PMIX_NODE_RANK) == (unsigned long)rank, "PMIX_NODE_RANK differs (single node)");
  CHECK(get_unsigned(&me, PMIX_NODEID) == 0, "PMIX_NODEID is not 0");
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  char *pmix_host = get_string(&me, PMIX_HOSTNAME);
  CHECK(strcmp(pmix_host, host) == 0, "PMIX_HOSTNAME '%s', expected '%s'", pmix_host, host);
  free(pmix_host);
  pmix_proc_t last;
  PMIX_PROC_LOAD(&last, me.nspace, size - 1);
  CHECK(get_unsigned(&last, PMIX_LOCAL_RANK) == size - 1, "PMIX_LOCAL_RANK of rank %u is wrong", size - 1);

  if (show_affinity) print_affinity();
  if (show_tmpdir) {
    const char *dir = getenv("PMIX_SERVER_TMPDIR");
    printf("tmpdir %s\n", dir ? dir : "(unset)");
  }
  fflush(stdout);

  /* Failures on purpose, before the data fence, so the others block in it (or sleep). */
  int failing = rank == crash || rank == exit_rank || rank == abort_rank || rank == no_finalize;
  if (rank == crash) raise(SIGSEGV);
  if (rank == no_finalize) _exit(0);
  if (rank == exit_rank) exit((int)exit_code);
  if (rank == abort_rank) {
    PMIx_Abort((int)abort_code, abort_msg, NULL, 0);
    sleep(60); /* a launcher must kill us; returning here is not enough */
    return 99;
  }
  if (!failing && others_sleep && (crash >= 0 || exit_rank >= 0 || abort_rank >= 0 || no_finalize >= 0)) {
    sleep(60);
    return 98;
  }

  if (sleep_seconds > 0) sleep((unsigned)sleep_seconds);
  if (wait_file) wait_for_file(wait_file);
  put_and_check_all("hoshmem.test.a", size, 7);
  for (long i = 0; i < barriers; ++i) fence(0);
  put_and_check_all("hoshmem.test.b", size, 11); /* a second exchange after barriers */

  printf("ok rank %ld size %u\n", rank, size);
  fflush(stdout);
  rc = PMIx_Finalize(NULL, 0);
  CHECK(rc == PMIX_SUCCESS, "PMIx_Finalize: %s", PMIx_Error_string(rc));
  return 0;
}
