// Library setup, exit and query routines.
#include <sys/time.h>
#include <time.h>

#include <cstdio>
#include <cstring>

#include "lib/api/api.h"

using namespace hoshmem;

extern "C" {

void pshmem_init(void) { runtime_init(SHMEM_THREAD_SINGLE, nullptr, "shmem_init"); }

int pshmem_init_thread(int requested, int *provided) {
  runtime_init(requested, provided, "shmem_init_thread");
  return 0;
}

void pshmem_query_thread(int *provided) {
  if (provided) *provided = rt.thread_level;
}

// 1.6: callable at any time, before init and after finalize too.
void pshmem_query_initialized(int *initialized) {
  if (initialized) *initialized = rt.initialized ? 1 : 0;
}

void pshmem_finalize(void) { runtime_finalize(); }

void pshmem_global_exit(int status) {
  fflush(nullptr);
  // An exit status is the status modulo 256, so 256 (or -256, 512, ...) would end the job with 0,
  // a success: such a status exits with 255 instead, here and through the launcher (mpirun too
  // takes the job's status from PMIx_Abort). The message keeps the status the program passed,
  // for the launcher's report.
  const int code = status != 0 && (status & 0xff) == 0 ? 255 : status & 0xff;
  char message[48];
  snprintf(message, sizeof message, "shmem_global_exit(%d)", status);
  if (rt.boot) rt.boot->abort(code, message);
  _exit(code);
}

int pshmem_my_pe(void) { return rt.me; }
int pshmem_n_pes(void) { return rt.npes; }

// Every PE of the job is reachable by puts, gets and AMOs, on this node or over the network.
int pshmem_pe_accessible(int pe) { return rt.initialized && pe >= 0 && pe < rt.npes; }

int pshmem_addr_accessible(const void *addr, int pe) {
  return pshmem_pe_accessible(pe) && rt.space.is_symmetric(addr);
}

// Loads and stores reach only the PEs of this node: NULL for the others.
void *pshmem_ptr(const void *dest, int pe) {
  if (!pshmem_pe_accessible(pe) || !rt.control[pe]) return nullptr;
  return rt.space.translate(dest, pe);
}

void pshmem_info_get_version(int *major, int *minor) {
  if (major) *major = SHMEM_MAJOR_VERSION;
  if (minor) *minor = SHMEM_MINOR_VERSION;
}

void pshmem_info_get_name(char *name) {
  if (name) snprintf(name, SHMEM_MAX_NAME_LEN, "%s", SHMEM_VENDOR_STRING);
}

// Profiling control: hoshmem has no built-in profiling, so every level means the same.
void pshmem_pcontrol(int, ...) {}

// Deprecated (1.2) names.
void pstart_pes(int) { runtime_init(SHMEM_THREAD_SINGLE, nullptr, "start_pes"); }
int p_my_pe(void) { return rt.me; }
int p_num_pes(void) { return rt.npes; }

// Extensions.
const char *pshmemx_atomicity_mode(void) { return atomics::mode_name(rt.mode); }
void pshmemx_info_print(void) { runtime_print_info(stdout); }
double pshmemx_wtime(void) {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // extern "C"

HOSHMEM_ALIAS(shmem_init);
HOSHMEM_ALIAS(shmem_init_thread);
HOSHMEM_ALIAS(shmem_query_thread);
HOSHMEM_ALIAS(shmem_query_initialized);
HOSHMEM_ALIAS(shmem_finalize);
HOSHMEM_ALIAS(shmem_global_exit);
HOSHMEM_ALIAS(shmem_my_pe);
HOSHMEM_ALIAS(shmem_n_pes);
HOSHMEM_ALIAS(shmem_pe_accessible);
HOSHMEM_ALIAS(shmem_addr_accessible);
HOSHMEM_ALIAS(shmem_ptr);
HOSHMEM_ALIAS(shmem_info_get_version);
HOSHMEM_ALIAS(shmem_info_get_name);
HOSHMEM_ALIAS(shmem_pcontrol);
HOSHMEM_ALIAS(start_pes);
HOSHMEM_ALIAS(_my_pe);
HOSHMEM_ALIAS(_num_pes);
HOSHMEM_ALIAS(shmemx_atomicity_mode);
HOSHMEM_ALIAS(shmemx_info_print);
HOSHMEM_ALIAS(shmemx_wtime);
