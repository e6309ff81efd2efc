/*
 * hoshmem: OpenSHMEM 1.5 C API.
 *
 * Routines are declared from one table per family (shmem_types.h, shmem_decls.h); the profiling
 * twins (pshmem_*) are in pshmem.h. Implementation-specific extensions are in shmemx.h.
 */
#ifndef HOSHMEM_SHMEM_H
#define HOSHMEM_SHMEM_H

#include <stddef.h>
#include <stdint.h>

#include "shmem_decls.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- version and library constants ------------------------------------------------------------ */
#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 5
#define SHMEM_MAX_NAME_LEN 256
#define SHMEM_VENDOR_STRING "hoshmem 0.1"

#define SHMEM_THREAD_SINGLE 0
#define SHMEM_THREAD_FUNNELED 1
#define SHMEM_THREAD_SERIALIZED 2
#define SHMEM_THREAD_MULTIPLE 3

#define SHMEM_CMP_EQ 0
#define SHMEM_CMP_NE 1
#define SHMEM_CMP_GT 2
#define SHMEM_CMP_GE 3
#define SHMEM_CMP_LT 4
#define SHMEM_CMP_LE 5

/* hints for shmem_malloc_with_hints (bit flags) */
#define SHMEM_MALLOC_ATOMICS_REMOTE (1L << 0)
#define SHMEM_MALLOC_SIGNAL_REMOTE (1L << 1)

/* deprecated spellings (since 1.3) */
#define _SHMEM_MAJOR_VERSION SHMEM_MAJOR_VERSION
#define _SHMEM_MINOR_VERSION SHMEM_MINOR_VERSION
#define _SHMEM_MAX_NAME_LEN SHMEM_MAX_NAME_LEN
#define _SHMEM_VENDOR_STRING SHMEM_VENDOR_STRING
#define _SHMEM_CMP_EQ SHMEM_CMP_EQ
#define _SHMEM_CMP_NE SHMEM_CMP_NE
#define _SHMEM_CMP_GT SHMEM_CMP_GT
#define _SHMEM_CMP_GE SHMEM_CMP_GE
#define _SHMEM_CMP_LT SHMEM_CMP_LT
#define _SHMEM_CMP_LE SHMEM_CMP_LE

/* --- routines --------------------------------------------------------------------------------- */
HOSHMEM_DECLARE_API(shmem)
HOSHMEM_DECLARE_OLD_NAMES()

#ifdef __cplusplus
}
#endif

#include "pshmem.h"

#endif /* HOSHMEM_SHMEM_H */
