/*
 * hoshmem: OpenSHMEM profiling interface. Every routine of shmem.h also exists as pshmem_<name>;
 * the shmem_ names are weak aliases of these, so a tool can define shmem_X and call pshmem_X.
 */
#ifndef HOSHMEM_PSHMEM_H
#define HOSHMEM_PSHMEM_H

#include <stddef.h>
#include <stdint.h>

#include "shmem.h" /* types and handles; shmem.h includes this file back at its end */
#include "shmem_decls.h"

#ifdef __cplusplus
extern "C" {
#endif

HOSHMEM_DECLARE_API(pshmem)
HOSHMEM_DECLARE_OLD_NAMES(p)

#ifdef __cplusplus
}
#endif

#endif /* HOSHMEM_PSHMEM_H */
