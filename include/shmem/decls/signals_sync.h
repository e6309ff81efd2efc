/*
 * hoshmem: declarations of signals (put_signal, signal_fetch/add/set, signal_wait_until) and the
 * point-to-point _all/_any/_some/_vector families. Expanded by HOSHMEM_DECLARE_API(P).
 * (Filled in as the routines are implemented: a declared routine works.)
 */
#ifndef HOSHMEM_DECLS_SIGNALS_SYNC_H
#define HOSHMEM_DECLS_SIGNALS_SYNC_H
#define HOSHMEM_DECL_SIGNALS_SYNC(P)
#endif
