/*
 * hoshmem: declarations of the collectives: team sync/barrier, broadcast, collect, fcollect,
 * alltoall(s), reductions, scans, and the deprecated active-set forms. Expanded by
 * HOSHMEM_DECLARE_API(P). (Filled in as the routines are implemented: a declared routine works.)
 */
#ifndef HOSHMEM_DECLS_COLLECTIVES_H
#define HOSHMEM_DECLS_COLLECTIVES_H
#define HOSHMEM_DECL_COLLECTIVES(P)
#endif
