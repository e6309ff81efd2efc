// lib/core: one-sided accumulate, dest[i] = OP(dest[i], source[i]) on another PE's array
// (shmemx_TYPENAME_OP_accumulate, <shmemx.h>).
//
// Two accumulates that may touch the same element stay atomic with respect to each other, from
// any PEs, whatever their sizes. So the job decides once, per element type, how every update of
// that type is made, and updates made by an HCA and updates made by a CPU never meet:
//
//   element by element  each element is one atomic operation: the HCA's in all-HW mode (32- and
//                       64-bit integers: sum/and/or/xor as non-fetching HCA atomics, replace as
//                       an atomic set, min/max/prod as compare-swap loops), or a CPU atomic on
//                       the mapped element in a one-node all-SW job (types of up to 8 bytes);
//   under stripe locks  every other type, and every type with HOSHMEM_ACC=caller or owner: the
//                       target's locks that cover the range (one 8-byte word per 64 KiB stripe
//                       of the segment, taken with the job's own atomics, in ascending order)
//                       are held while the elements change; either the caller takes them, gets
//                       the section, computes, puts it back and releases (caller computes), or
//                       the elements go to the target in messages and its CPU applies them
//                       (owner computes, to other nodes): in all-SW mode the target takes the
//                       locks itself; in all-HW mode, where its CPU may not touch a word the
//                       HCA updates, the caller takes and releases them around the messages.
//
// Not atomic with respect to AMOs, puts or stores on the same elements (documented in
// <shmemx.h> and docs/user-guide.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <shmem_types.h>

#include "lib/core/team.h"
#include "lib/transport/shm/control_block.h"

namespace hoshmem::acc {

enum class Op : uint8_t { Sum, Prod, Min, Max, And, Or, Xor, Replace };

// One element type per TYPENAME of the reduction tables (int and int32 are the same C type but
// separate routines; both name the same arithmetic).
enum class Type : uint8_t {
#define HOSHMEM_ACC_TYPE_ENUM(P, T, N) t_##N,
  HOSHMEM_REDUCE_ARITH_TYPES(HOSHMEM_ACC_TYPE_ENUM, _)
#undef HOSHMEM_ACC_TYPE_ENUM
};

// How an accumulate is made (HOSHMEM_ACC forces one where it can run). Owner computes: the
// elements go to the target in messages (all-SW mode, another node), and the target's CPU (the
// application thread inside the library, or its progress thread) applies them under its own
// stripe locks, so it mixes with caller computes on the same elements.
enum class Scheme : uint8_t { CpuElements, NicElements, Caller, Owner };

// After the mode and the transports are known (runtime_init): reads HOSHMEM_ACC and fixes the
// rule for the job; a forced scheme that cannot run in this job is fatal here.
void accumulate_init();
// For SHMEM_INFO: the rule, one line.
std::string accumulate_rule();
// The scheme an accumulate of `bytes` of `type` to PE `pe` uses in this job.
Scheme scheme_for(Type type, int pe, size_t bytes);
const char *scheme_name(Scheme s);

// dest[i] = OP(dest[i], source[i]) for i < nelems on PE t.pe. Blocking or not, `source` may be
// reused on return; the update is complete at the next quiet (or barrier) of t's context.
void accumulate(Type type, Op op, Target t, void *dest, const void *source, size_t nelems,
                const char *routine);

// dst[i] = OP(dst[i], src[i]) with plain loads and stores (the locked schemes' arithmetic).
void apply(Type type, Op op, void *dst, const void *src, size_t nelems);

// The target's stripe locks that cover [dest, dest + bytes) (this PE's address of a symmetric
// object), taken in ascending order with the job's atomics and released in reverse; also the
// lock fallback of wide masked atomics (lib/api/amo_masked.cc).
struct HeldLocks {
  bool take[shm::kAccumulateLocks];
};
HeldLocks lock_range(Target t, const void *dest, size_t bytes, const char *routine);
void unlock_range(Target t, const HeldLocks &held, const char *routine);
// On the target, or its node's server (HOSHMEM_PROGRESS=node): the stripe locks of PE `pe` (this
// one or one of its node) over [sym, sym + bytes) (this PE's address of the object), taken with
// CPU atomics: all taken (true), or none when one is held (a caller computing there: the sender
// retries).
bool try_lock_here(int pe, const void *sym, size_t bytes, HeldLocks *held);
void unlock_here(int pe, const HeldLocks &held);

// On the target (or its server), owner computes: `bytes` of elements at `src` (any alignment)
// applied to PE `pe`'s copy of `sym`, mapped here at `to`, if the stripe locks covering it are
// free (or `locked`: the sender holds them); false (nothing done) if one is held. `type` and `op`
// come from a message: values out of range are fatal.
bool owner_apply(int pe, uint8_t type, uint8_t op, const void *sym, char *to, const void *src,
                 size_t bytes, bool locked);

}  // namespace hoshmem::acc
