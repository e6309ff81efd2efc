/*
 * hoshmem: the C11 type-generic interfaces (shmem_put, shmem_atomic_fetch_add, ...), as _Generic
 * macros over the type tables. C only (C++ programs call the typed names).
 * (Filled in as the typed routines they dispatch to are implemented.)
 */
#ifndef HOSHMEM_SHMEM_GENERIC_H
#define HOSHMEM_SHMEM_GENERIC_H
#endif /* HOSHMEM_SHMEM_GENERIC_H */
