// Collectives: team forms (sync, broadcast, collect, fcollect, alltoall(s), reductions, 1.6
// scans) and the deprecated active-set forms. This file checks arguments, builds the TeamView and
// picks the element type; lib/coll does the moving and synchronizing.
#include <cstring>
#include <type_traits>
#include <vector>

#include "lib/api/api.h"
#include "lib/coll/collectives.h"
#include "lib/core/team.h"

using namespace hoshmem;

// lib/coll keeps out of the bytes that team management reserves at the end of every slot.
static_assert(coll::kMgmtReserveBytes == kTeamMgmtBytes);

namespace {

// This PE's address of the object a symmetric token names (lib/coll names every PE's copy by it).
const char *token_address(uint64_t token) {
  return reinterpret_cast<const char *>(
      token & SymmetricSpace::kDataBit ? rt.space.data.base + (token & ~SymmetricSpace::kDataBit)
                                       : rt.space.heap.base + token);
}

// Under SHMEM_DEBUG the collectives compare the arguments that must agree across the team.
const char *debug_check(const char *routine) { return rt.debug ? routine : nullptr; }

// Channels are indexed by world PE in a slot of fixed size.
void check_channel_room(const char *routine) {
  if (rt.npes > coll::kMaxChannelPes) [[unlikely]]
    fatal(routine, "collectives support at most %d PEs (job has %d)", coll::kMaxChannelPes,
          rt.npes);
}

const TeamView &team_view(shmem_team_t team, const char *routine) {
  if (!rt.initialized) [[unlikely]]
    fatal(routine, "called before shmem_init");
  if (team == SHMEM_TEAM_INVALID) [[unlikely]]
    fatal(routine, "team is SHMEM_TEAM_INVALID");
  check_team(team, routine);  // SHMEM_DEBUG: a destroyed or foreign handle
  if (team->view.rank < 0 || team->view.size < 1) [[unlikely]]
    fatal(routine, "this PE is not a member of the team");
  team->view.watch = rt.debug ? routine : nullptr;
  if (rt.debug) {
    check_channel_room(routine);
    check_active_sets_matched(team->view, routine);
  }
  return team->view;
}

// The active set PE_start, 2^logPE_stride, PE_size as a temporary team in the active-set slot.
// A PE outside the set is not a participant: older programs call active-set collectives on every
// PE with a subset of them, and other implementations return at once there, so `member` is false
// and the routine returns (SHMEM_DEBUG says so). The set itself must still fit the job.
struct ActiveSet {
  std::vector<int> members;
  TeamView view;
  bool member = true;

  ActiveSet(int start, int log_stride, int size, const long *psync, const char *routine) {
    if (!rt.initialized) [[unlikely]]
      fatal(routine, "called before shmem_init");
    if (size < 1 || start < 0 || log_stride < 0 || log_stride > 30) [[unlikely]]
      fatal(routine, "invalid active set (PE_start=%d, logPE_stride=%d, PE_size=%d)", start,
            log_stride, size);
    const long long stride = 1LL << log_stride;
    if (start + (size - 1) * stride >= rt.npes) [[unlikely]]
      fatal(routine, "active set (PE_start=%d, logPE_stride=%d, PE_size=%d) exceeds %d PEs",
            start, log_stride, size, rt.npes);
    const long long offset = rt.me - start;
    if (offset < 0 || offset % stride || offset / stride >= size) [[unlikely]] {
      if (rt.debug)
        warn(routine,
             "this PE is not in the active set (PE_start=%d, logPE_stride=%d, PE_size=%d): "
             "returning without taking part",
             start, log_stride, size);
      member = false;
      return;
    }
    if (!psync) [[unlikely]]
      fatal(routine, "pSync is NULL");
    if (!rt.space.is_symmetric(psync)) [[unlikely]]
      fatal(routine, "pSync (%p) is not a symmetric address", static_cast<const void *>(psync));
    // We never write pSync, so a word other than SHMEM_SYNC_VALUE is the caller's mistake.
    const int words = rt.debug ? SHMEM_SYNC_SIZE : 1;
    for (int i = 0; i < words; ++i)
      if (psync[i] != SHMEM_SYNC_VALUE) [[unlikely]]
        fatal(routine, "pSync[%d] is %ld, not SHMEM_SYNC_VALUE (%ld): initialize pSync before use",
              i, psync[i], static_cast<long>(SHMEM_SYNC_VALUE));
    members.resize(size);
    for (int i = 0; i < size; ++i) members[i] = static_cast<int>(start + i * stride);
    view.rank = static_cast<int>(offset / stride);
    view.size = size;
    view.world = members.data();
    view.slot = kActiveSetSlot;
    view.control = rt.control;
    view.wait = &rt.wait;
    view.watch = rt.debug ? routine : nullptr;
    view.note_locality();
    check_channel_room(routine);
  }
};

size_t checked_bytes(size_t nelems, size_t elem_size, const char *routine) {
  if (elem_size && nelems > SIZE_MAX / elem_size) [[unlikely]]
    fatal(routine, "nelems %zu overflows the address space", nelems);
  return nelems * elem_size;
}

// A buffer peers read or that must be symmetric: a symmetric address whose object holds `bytes`
// (and the object's size).
void check_symmetric(const void *p, size_t bytes, const char *what, const char *routine) {
  if (bytes == 0) return;
  size_t room;
  if (!p || !rt.space.translate(p, rt.me, &room)) [[unlikely]]
    fatal(routine, "%s (%p) is not a symmetric address", what, p);
  if (bytes > room) [[unlikely]]
    report_out_of_bounds(p, bytes, room, routine);
}

void check_root(int root, int size, const char *routine) {
  if (root < 0 || root >= size) [[unlikely]]
    fatal(routine, "PE_root %d is out of range [0, %d)", root, size);
}

void check_in_place_or_disjoint(const void *dest, const void *source, size_t bytes,
                                const char *routine) {
  if (!rt.debug || dest == source || bytes == 0) return;
  auto d = reinterpret_cast<uintptr_t>(dest), s = reinterpret_cast<uintptr_t>(source);
  if (d < s + bytes && s < d + bytes) [[unlikely]]
    fatal(routine, "dest and source overlap without being the same array");
}

void check_strides(ptrdiff_t dst, ptrdiff_t sst, const char *routine) {
  if (dst < 1 || sst < 1) [[unlikely]]
    fatal(routine, "strides must be positive (dst=%td, sst=%td)", dst, sst);
}

// Bytes spanned by `count` elements at `stride`.
size_t strided_span(size_t count, ptrdiff_t stride, size_t elem_size, const char *routine) {
  if (count == 0) return 0;
  return checked_bytes((count - 1) * static_cast<size_t>(stride) + 1, elem_size, routine);
}

void quiet_default() {
  if (rt.remote_atomics) rt.remote_atomics->quiet();
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

// --- the generic operations, shared by team and active-set forms ---

void do_broadcast(const TeamView &v, void *dest, const void *source, size_t nelems,
                  size_t elem_size, int root, bool root_copies, const char *routine) {
  check_root(root, v.size, routine);
  const size_t bytes = checked_bytes(nelems, elem_size, routine);
  check_symmetric(dest, bytes, "dest", routine);
  if (v.rank == root) check_symmetric(source, bytes, "source", routine);
  coll::broadcast(v, dest, source, bytes, root, root_copies, debug_check(routine));
}

void do_collect(const TeamView &v, void *dest, const void *source, size_t nelems,
                size_t elem_size, bool fixed, const char *routine) {
  const size_t bytes = checked_bytes(nelems, elem_size, routine);
  check_symmetric(source, bytes, "source", routine);
  if (fixed) {
    check_symmetric(dest, checked_bytes(bytes, v.size, routine), "dest", routine);
    coll::fcollect(v, dest, source, bytes, debug_check(routine));
  } else {
    check_symmetric(dest, bytes, "dest", routine);
    coll::collect(v, token_address, dest, source, rt.space.token(source), bytes);
  }
}

void do_alltoall(const TeamView &v, void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,
                 size_t nelems, size_t elem_size, const char *routine) {
  check_strides(dst, sst, routine);
  const size_t total = checked_bytes(nelems, v.size, routine);
  check_symmetric(dest, strided_span(total, dst, elem_size, routine), "dest", routine);
  check_symmetric(source, strided_span(total, sst, elem_size, routine), "source", routine);
  coll::alltoall(v, dest, source, dst, sst, nelems, elem_size, debug_check(routine));
}

void do_reduce(const TeamView &v, void *dest, const void *source, size_t nelems, size_t elem_size,
               coll::Combine combine, const char *routine) {
  const size_t bytes = checked_bytes(nelems, elem_size, routine);
  check_symmetric(dest, bytes, "dest", routine);
  check_symmetric(source, bytes, "source", routine);
  check_in_place_or_disjoint(dest, source, bytes, routine);
  coll::reduce(v, dest, source, nelems, elem_size, combine, debug_check(routine));
}

void do_scan(const TeamView &v, void *dest, const void *source, size_t nelems, size_t elem_size,
             coll::Combine combine, bool inclusive, const void *identity, const char *routine) {
  const size_t bytes = checked_bytes(nelems, elem_size, routine);
  check_symmetric(dest, bytes, "dest", routine);
  check_symmetric(source, bytes, "source", routine);
  check_in_place_or_disjoint(dest, source, bytes, routine);
  coll::scan(v, dest, source, nelems, elem_size, combine, inclusive, identity,
             debug_check(routine));
}

// --- reduction operators -----------------------------------------------------------------------
// Integer sums and products wrap (computed unsigned: no signed-overflow undefined behaviour).

template <class T>
struct OpAnd { static void apply(T &a, T b) { a &= b; } };
template <class T>
struct OpOr { static void apply(T &a, T b) { a |= b; } };
template <class T>
struct OpXor { static void apply(T &a, T b) { a ^= b; } };
template <class T>
struct OpMax { static void apply(T &a, T b) { if (b > a) a = b; } };
template <class T>
struct OpMin { static void apply(T &a, T b) { if (b < a) a = b; } };
template <class T>
struct OpSum {
  static void apply(T &a, T b) {
    if constexpr (std::is_integral_v<T>)
      a = static_cast<T>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
    else
      a = a + b;
  }
};
template <class T>
struct OpProd {
  static void apply(T &a, T b) {
    if constexpr (std::is_integral_v<T>)
      a = static_cast<T>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
    else
      a = a * b;
  }
};

template <class T, template <class> class Op>
void combine(void *acc, const void *in, size_t nelems) {
  T *a = static_cast<T *>(acc);
  const T *b = static_cast<const T *>(in);
  for (size_t i = 0; i < nelems; ++i) Op<T>::apply(a[i], b[i]);
}

template <class T, template <class> class Op>
int team_reduce(shmem_team_t team, T *dest, const T *source, size_t nelems, const char *routine) {
  do_reduce(team_view(team, routine), dest, source, nelems, sizeof(T), combine<T, Op>, routine);
  return 0;
}

template <class T>
int team_scan(shmem_team_t team, T *dest, const T *source, size_t nelems, bool inclusive,
              const char *routine) {
  const T zero{};
  do_scan(team_view(team, routine), dest, source, nelems, sizeof(T), combine<T, OpSum>, inclusive,
          &zero, routine);
  return 0;
}

template <class T, template <class> class Op>
void to_all(T *dest, const T *source, int nreduce, int start, int log_stride, int size, T *pwrk,
            long *psync, const char *routine) {
  (void)pwrk;  // staging is in the active-set slot
  ActiveSet set(start, log_stride, size, psync, routine);
  if (!set.member) return;
  if (nreduce < 0) [[unlikely]]
    fatal(routine, "nreduce %d is negative", nreduce);
  do_reduce(set.view, dest, source, static_cast<size_t>(nreduce), sizeof(T), combine<T, Op>,
            routine);
}

}  // namespace

void hoshmem::check_active_sets_matched(const TeamView &view, const char *routine) {
  const int pe = coll::unmatched_active_set_peer(view);
  if (pe >= 0) [[unlikely]]
    fatal(routine,
          "PE %d is still in an active-set collective that this PE did not call with the same "
          "(PE_start, logPE_stride, PE_size)",
          pe);
}

extern "C" {

int pshmem_team_sync(shmem_team_t team) {
  coll::sync(team_view(team, HOSHMEM_ROUTINE));
  return 0;
}

void pshmem_sync(int PE_start, int logPE_stride, int PE_size, long *pSync) {
  ActiveSet set(PE_start, logPE_stride, PE_size, pSync, HOSHMEM_ROUTINE);
  if (set.member) coll::sync(set.view);
}

void pshmem_barrier(int PE_start, int logPE_stride, int PE_size, long *pSync) {
  ActiveSet set(PE_start, logPE_stride, PE_size, pSync, HOSHMEM_ROUTINE);
  if (!set.member) return;
  quiet_default();
  coll::sync(set.view);
}

// --- typed team data movement ---
#define DEFINE_COLL_RMA(P, T, N)                                                                 \
  int pshmem_##N##_broadcast(shmem_team_t team, T *dest, const T *source, size_t nelems,        \
                             int PE_root) {                                                      \
    do_broadcast(team_view(team, HOSHMEM_ROUTINE), dest, source, nelems, sizeof(T), PE_root,     \
                 true, HOSHMEM_ROUTINE);                                                         \
    return 0;                                                                                    \
  }                                                                                              \
  int pshmem_##N##_collect(shmem_team_t team, T *dest, const T *source, size_t nelems) {        \
    do_collect(team_view(team, HOSHMEM_ROUTINE), dest, source, nelems, sizeof(T), false,         \
               HOSHMEM_ROUTINE);                                                                 \
    return 0;                                                                                    \
  }                                                                                              \
  int pshmem_##N##_fcollect(shmem_team_t team, T *dest, const T *source, size_t nelems) {       \
    do_collect(team_view(team, HOSHMEM_ROUTINE), dest, source, nelems, sizeof(T), true,          \
               HOSHMEM_ROUTINE);                                                                 \
    return 0;                                                                                    \
  }                                                                                              \
  int pshmem_##N##_alltoall(shmem_team_t team, T *dest, const T *source, size_t nelems) {       \
    do_alltoall(team_view(team, HOSHMEM_ROUTINE), dest, source, 1, 1, nelems, sizeof(T),         \
                HOSHMEM_ROUTINE);                                                                \
    return 0;                                                                                    \
  }                                                                                              \
  int pshmem_##N##_alltoalls(shmem_team_t team, T *dest, const T *source, ptrdiff_t dst,        \
                             ptrdiff_t sst, size_t nelems) {                                     \
    do_alltoall(team_view(team, HOSHMEM_ROUTINE), dest, source, dst, sst, nelems, sizeof(T),     \
                HOSHMEM_ROUTINE);                                                                \
    return 0;                                                                                    \
  }
HOSHMEM_RMA_TYPES(DEFINE_COLL_RMA, pshmem)

int pshmem_broadcastmem(shmem_team_t team, void *dest, const void *source, size_t nelems,
                        int PE_root) {
  do_broadcast(team_view(team, HOSHMEM_ROUTINE), dest, source, nelems, 1, PE_root, true,
               HOSHMEM_ROUTINE);
  return 0;
}
int pshmem_collectmem(shmem_team_t team, void *dest, const void *source, size_t nelems) {
  do_collect(team_view(team, HOSHMEM_ROUTINE), dest, source, nelems, 1, false, HOSHMEM_ROUTINE);
  return 0;
}
int pshmem_fcollectmem(shmem_team_t team, void *dest, const void *source, size_t nelems) {
  do_collect(team_view(team, HOSHMEM_ROUTINE), dest, source, nelems, 1, true, HOSHMEM_ROUTINE);
  return 0;
}
int pshmem_alltoallmem(shmem_team_t team, void *dest, const void *source, size_t nelems) {
  do_alltoall(team_view(team, HOSHMEM_ROUTINE), dest, source, 1, 1, nelems, 1, HOSHMEM_ROUTINE);
  return 0;
}
int pshmem_alltoallsmem(shmem_team_t team, void *dest, const void *source, ptrdiff_t dst,
                        ptrdiff_t sst, size_t nelems) {
  do_alltoall(team_view(team, HOSHMEM_ROUTINE), dest, source, dst, sst, nelems, 1,
              HOSHMEM_ROUTINE);
  return 0;
}

// --- team reductions and scans ---
#define DEFINE_REDUCE_BIT(P, T, N)                                                               \
  int pshmem_##N##_and_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce) {    \
    return team_reduce<T, OpAnd>(team, dest, source, nreduce, HOSHMEM_ROUTINE);                  \
  }                                                                                              \
  int pshmem_##N##_or_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce) {     \
    return team_reduce<T, OpOr>(team, dest, source, nreduce, HOSHMEM_ROUTINE);                   \
  }                                                                                              \
  int pshmem_##N##_xor_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce) {    \
    return team_reduce<T, OpXor>(team, dest, source, nreduce, HOSHMEM_ROUTINE);                  \
  }
#define DEFINE_REDUCE_MINMAX(P, T, N)                                                            \
  int pshmem_##N##_max_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce) {    \
    return team_reduce<T, OpMax>(team, dest, source, nreduce, HOSHMEM_ROUTINE);                  \
  }                                                                                              \
  int pshmem_##N##_min_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce) {    \
    return team_reduce<T, OpMin>(team, dest, source, nreduce, HOSHMEM_ROUTINE);                  \
  }
#define DEFINE_REDUCE_ARITH(P, T, N)                                                             \
  int pshmem_##N##_sum_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce) {    \
    return team_reduce<T, OpSum>(team, dest, source, nreduce, HOSHMEM_ROUTINE);                  \
  }                                                                                              \
  int pshmem_##N##_prod_reduce(shmem_team_t team, T *dest, const T *source, size_t nreduce) {   \
    return team_reduce<T, OpProd>(team, dest, source, nreduce, HOSHMEM_ROUTINE);                 \
  }                                                                                              \
  int pshmem_##N##_sum_inscan(shmem_team_t team, T *dest, const T *source, size_t nelems) {     \
    return team_scan<T>(team, dest, source, nelems, true, HOSHMEM_ROUTINE);                      \
  }                                                                                              \
  int pshmem_##N##_sum_exscan(shmem_team_t team, T *dest, const T *source, size_t nelems) {     \
    return team_scan<T>(team, dest, source, nelems, false, HOSHMEM_ROUTINE);                     \
  }
HOSHMEM_REDUCE_BIT_TYPES(DEFINE_REDUCE_BIT, pshmem)
HOSHMEM_REDUCE_MINMAX_TYPES(DEFINE_REDUCE_MINMAX, pshmem)
HOSHMEM_REDUCE_ARITH_TYPES(DEFINE_REDUCE_ARITH, pshmem)

// --- deprecated active-set forms ---
#define DEFINE_ASET_SIZED(B)                                                                     \
  void pshmem_broadcast##B(void *dest, const void *source, size_t nelems, int PE_root,          \
                           int PE_start, int logPE_stride, int PE_size, long *pSync) {           \
    ActiveSet set(PE_start, logPE_stride, PE_size, pSync, HOSHMEM_ROUTINE);                      \
    if (!set.member) return;                                                                   \
    do_broadcast(set.view, dest, source, nelems, B / 8, PE_root, false, HOSHMEM_ROUTINE);        \
  }                                                                                              \
  void pshmem_collect##B(void *dest, const void *source, size_t nelems, int PE_start,           \
                         int logPE_stride, int PE_size, long *pSync) {                           \
    ActiveSet set(PE_start, logPE_stride, PE_size, pSync, HOSHMEM_ROUTINE);                      \
    if (!set.member) return;                                                                   \
    do_collect(set.view, dest, source, nelems, B / 8, false, HOSHMEM_ROUTINE);                   \
  }                                                                                              \
  void pshmem_fcollect##B(void *dest, const void *source, size_t nelems, int PE_start,          \
                          int logPE_stride, int PE_size, long *pSync) {                          \
    ActiveSet set(PE_start, logPE_stride, PE_size, pSync, HOSHMEM_ROUTINE);                      \
    if (!set.member) return;                                                                   \
    do_collect(set.view, dest, source, nelems, B / 8, true, HOSHMEM_ROUTINE);                    \
  }                                                                                              \
  void pshmem_alltoall##B(void *dest, const void *source, size_t nelems, int PE_start,          \
                          int logPE_stride, int PE_size, long *pSync) {                          \
    ActiveSet set(PE_start, logPE_stride, PE_size, pSync, HOSHMEM_ROUTINE);                      \
    if (!set.member) return;                                                                   \
    do_alltoall(set.view, dest, source, 1, 1, nelems, B / 8, HOSHMEM_ROUTINE);                   \
  }                                                                                              \
  void pshmem_alltoalls##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,        \
                           size_t nelems, int PE_start, int logPE_stride, int PE_size,           \
                           long *pSync) {                                                        \
    ActiveSet set(PE_start, logPE_stride, PE_size, pSync, HOSHMEM_ROUTINE);                      \
    if (!set.member) return;                                                                   \
    do_alltoall(set.view, dest, source, dst, sst, nelems, B / 8, HOSHMEM_ROUTINE);               \
  }
DEFINE_ASET_SIZED(32)
DEFINE_ASET_SIZED(64)

#define ASET_ARGS(T)                                                                             \
  T *dest, const T *source, int nreduce, int PE_start, int logPE_stride, int PE_size, T *pWrk,  \
      long *pSync
#define ASET_PASS dest, source, nreduce, PE_start, logPE_stride, PE_size, pWrk, pSync,           \
                  HOSHMEM_ROUTINE
#define DEFINE_TO_ALL_BIT(P, T, N)                                                               \
  void pshmem_##N##_and_to_all(ASET_ARGS(T)) { to_all<T, OpAnd>(ASET_PASS); }                   \
  void pshmem_##N##_or_to_all(ASET_ARGS(T)) { to_all<T, OpOr>(ASET_PASS); }                     \
  void pshmem_##N##_xor_to_all(ASET_ARGS(T)) { to_all<T, OpXor>(ASET_PASS); }
#define DEFINE_TO_ALL_MINMAX(P, T, N)                                                            \
  void pshmem_##N##_max_to_all(ASET_ARGS(T)) { to_all<T, OpMax>(ASET_PASS); }                   \
  void pshmem_##N##_min_to_all(ASET_ARGS(T)) { to_all<T, OpMin>(ASET_PASS); }
#define DEFINE_TO_ALL_ARITH(P, T, N)                                                             \
  void pshmem_##N##_sum_to_all(ASET_ARGS(T)) { to_all<T, OpSum>(ASET_PASS); }                   \
  void pshmem_##N##_prod_to_all(ASET_ARGS(T)) { to_all<T, OpProd>(ASET_PASS); }
HOSHMEM_ASET_REDUCE_BIT_TYPES(DEFINE_TO_ALL_BIT, pshmem)
HOSHMEM_ASET_REDUCE_MINMAX_TYPES(DEFINE_TO_ALL_MINMAX, pshmem)
HOSHMEM_ASET_REDUCE_ARITH_TYPES(DEFINE_TO_ALL_ARITH, pshmem)

}  // extern "C"

// --- the shmem_ names ---
HOSHMEM_ALIAS(shmem_team_sync);
HOSHMEM_ALIAS(shmem_sync);
HOSHMEM_ALIAS(shmem_barrier);
#define ALIAS_COLL_RMA(P, T, N)                                                                  \
  HOSHMEM_ALIAS(shmem_##N##_broadcast);                                                          \
  HOSHMEM_ALIAS(shmem_##N##_collect);                                                            \
  HOSHMEM_ALIAS(shmem_##N##_fcollect);                                                           \
  HOSHMEM_ALIAS(shmem_##N##_alltoall);                                                           \
  HOSHMEM_ALIAS(shmem_##N##_alltoalls);
HOSHMEM_RMA_TYPES(ALIAS_COLL_RMA, shmem)
HOSHMEM_ALIAS(shmem_broadcastmem);
HOSHMEM_ALIAS(shmem_collectmem);
HOSHMEM_ALIAS(shmem_fcollectmem);
HOSHMEM_ALIAS(shmem_alltoallmem);
HOSHMEM_ALIAS(shmem_alltoallsmem);
#define ALIAS_REDUCE_BIT(P, T, N)                                                                \
  HOSHMEM_ALIAS(shmem_##N##_and_reduce);                                                         \
  HOSHMEM_ALIAS(shmem_##N##_or_reduce);                                                          \
  HOSHMEM_ALIAS(shmem_##N##_xor_reduce);
#define ALIAS_REDUCE_MINMAX(P, T, N)                                                             \
  HOSHMEM_ALIAS(shmem_##N##_max_reduce);                                                         \
  HOSHMEM_ALIAS(shmem_##N##_min_reduce);
#define ALIAS_REDUCE_ARITH(P, T, N)                                                              \
  HOSHMEM_ALIAS(shmem_##N##_sum_reduce);                                                         \
  HOSHMEM_ALIAS(shmem_##N##_prod_reduce);                                                        \
  HOSHMEM_ALIAS(shmem_##N##_sum_inscan);                                                         \
  HOSHMEM_ALIAS(shmem_##N##_sum_exscan);
HOSHMEM_REDUCE_BIT_TYPES(ALIAS_REDUCE_BIT, shmem)
HOSHMEM_REDUCE_MINMAX_TYPES(ALIAS_REDUCE_MINMAX, shmem)
HOSHMEM_REDUCE_ARITH_TYPES(ALIAS_REDUCE_ARITH, shmem)
#define ALIAS_ASET_SIZED(B)                                                                      \
  HOSHMEM_ALIAS(shmem_broadcast##B);                                                             \
  HOSHMEM_ALIAS(shmem_collect##B);                                                               \
  HOSHMEM_ALIAS(shmem_fcollect##B);                                                              \
  HOSHMEM_ALIAS(shmem_alltoall##B);                                                              \
  HOSHMEM_ALIAS(shmem_alltoalls##B);
ALIAS_ASET_SIZED(32)
ALIAS_ASET_SIZED(64)
#define ALIAS_TO_ALL_BIT(P, T, N)                                                                \
  HOSHMEM_ALIAS(shmem_##N##_and_to_all);                                                         \
  HOSHMEM_ALIAS(shmem_##N##_or_to_all);                                                          \
  HOSHMEM_ALIAS(shmem_##N##_xor_to_all);
#define ALIAS_TO_ALL_MINMAX(P, T, N)                                                             \
  HOSHMEM_ALIAS(shmem_##N##_max_to_all);                                                         \
  HOSHMEM_ALIAS(shmem_##N##_min_to_all);
#define ALIAS_TO_ALL_ARITH(P, T, N)                                                              \
  HOSHMEM_ALIAS(shmem_##N##_sum_to_all);                                                         \
  HOSHMEM_ALIAS(shmem_##N##_prod_to_all);
HOSHMEM_ASET_REDUCE_BIT_TYPES(ALIAS_TO_ALL_BIT, shmem)
HOSHMEM_ASET_REDUCE_MINMAX_TYPES(ALIAS_TO_ALL_MINMAX, shmem)
HOSHMEM_ASET_REDUCE_ARITH_TYPES(ALIAS_TO_ALL_ARITH, shmem)
