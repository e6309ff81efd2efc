/*
 * hoshmem: extensions beyond the OpenSHMEM specification (shmemx_ prefix).
 */
#ifndef HOSHMEM_SHMEMX_H
#define HOSHMEM_SHMEMX_H

#include "shmem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The atomicity mode the job agreed on at shmem_init: "all-sw" (CPU atomics intra-node, software
 * active messages inter-node) or "all-hw" (HCA atomics everywhere, HCA loopback intra-node). */
const char *shmemx_atomicity_mode(void);

/* Prints what SHMEM_INFO=1 prints (version, build, every variable and its value) to stdout. */
void shmemx_info_print(void);

/* Seconds since an arbitrary fixed point, from a monotonic clock (for benchmarks and tests). */
double shmemx_wtime(void);

#ifdef __cplusplus
}
#endif

#endif /* HOSHMEM_SHMEMX_H */
