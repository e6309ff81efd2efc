/*
 * hoshmem: OpenSHMEM 1.6 C API (and every deprecated 1.5 name).
 *
 * Routines are declared from one table per family (shmem_types.h, shmem_decls.h); the profiling
 * twins (pshmem_*) are in pshmem.h. Implementation-specific extensions are in shmemx.h.
 */
#ifndef HOSHMEM_SHMEM_H
#define HOSHMEM_SHMEM_H

#include <stddef.h>
#include <stdint.h>

/* --- types and handles (before the declarations that use them) ------------------------------- */
#ifdef __cplusplus
extern "C" {
#endif
typedef struct hoshmem_team *shmem_team_t;
typedef struct hoshmem_ctx *shmem_ctx_t;
typedef struct {
  int num_contexts;
} shmem_team_config_t;
typedef struct {
  size_t total_ops;
} shmem_ctx_session_config_t;
#ifdef __cplusplus
}
#endif

#include "shmem_decls.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --- version and library constants ------------------------------------------------------------ */
#define SHMEM_MAJOR_VERSION 1
#define SHMEM_MINOR_VERSION 6
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

/* teams and contexts */
#define SHMEM_TEAM_INVALID ((shmem_team_t)0)
#define SHMEM_CTX_INVALID ((shmem_ctx_t)0)
#define SHMEM_TEAM_NUM_CONTEXTS (1L << 0)
#define SHMEM_CTX_SERIALIZED (1L << 0)
#define SHMEM_CTX_PRIVATE (1L << 1)
#define SHMEM_CTX_NOSTORE (1L << 2)
/* 1.6 sessions */
#define SHMEM_CTX_SESSION_BATCH (1L << 0)
#define SHMEM_CTX_SESSION_TOTAL_OPS (1L << 0)
/* signals */
#define SHMEM_SIGNAL_SET 0
#define SHMEM_SIGNAL_ADD 1

/* deprecated active-set collectives: pSync/pWrk sizes and the pSync initial value */
#define SHMEM_SYNC_VALUE 0L
#define SHMEM_SYNC_SIZE 64
#define SHMEM_BCAST_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_BARRIER_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_COLLECT_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALL_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_ALLTOALLS_SYNC_SIZE SHMEM_SYNC_SIZE
#define SHMEM_REDUCE_MIN_WRKDATA_SIZE 1
#define _SHMEM_SYNC_VALUE SHMEM_SYNC_VALUE
#define _SHMEM_BCAST_SYNC_SIZE SHMEM_BCAST_SYNC_SIZE
#define _SHMEM_REDUCE_SYNC_SIZE SHMEM_REDUCE_SYNC_SIZE
#define _SHMEM_BARRIER_SYNC_SIZE SHMEM_BARRIER_SYNC_SIZE
#define _SHMEM_COLLECT_SYNC_SIZE SHMEM_COLLECT_SYNC_SIZE
#define _SHMEM_REDUCE_MIN_WRKDATA_SIZE SHMEM_REDUCE_MIN_WRKDATA_SIZE

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

/* --- handles (link-time constants, defined by the library) ------------------------------------ */
extern shmem_team_t SHMEM_TEAM_WORLD;
extern shmem_team_t SHMEM_TEAM_SHARED;
extern shmem_ctx_t SHMEM_CTX_DEFAULT;

/* --- routines --------------------------------------------------------------------------------- */
HOSHMEM_DECLARE_API(shmem)
HOSHMEM_DECLARE_OLD_NAMES()

#ifdef __cplusplus
}
#endif

#include "pshmem.h"
#include "shmem_generic.h"
#include "shmem_inline.h" /* the inline fast path (HOSHMEM_NO_INLINE turns it off) */

#endif /* HOSHMEM_SHMEM_H */
