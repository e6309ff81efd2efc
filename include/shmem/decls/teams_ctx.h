/*
 * hoshmem: declarations of teams, contexts and every ctx_ form of RMA/AMO/ordering, plus the 1.6
 * team_ptr, ibput/ibget, pe_quiet and session routines. Expanded by HOSHMEM_DECLARE_API(P).
 * (Filled in as the routines are implemented: a declared routine works.)
 */
#ifndef HOSHMEM_DECLS_TEAMS_CTX_H
#define HOSHMEM_DECLS_TEAMS_CTX_H
#define HOSHMEM_DECL_TEAMS_CTX(P)
#endif
