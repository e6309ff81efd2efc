// Atomic memory operations: standard, extended, bitwise, their fetching _nbi forms and the
// deprecated 1.4 names. Each routine resolves the target and asks the atomics layer for the path:
// CPU atomics on the mapped word (all-SW mode, same node) or the job's atomic backend.
#include "lib/api/api.h"
#include "lib/atomics/cpu_atomics.h"
#include "lib/core/rdma_inline.h"
#include "lib/core/team.h"

using namespace hoshmem;
namespace cpu = hoshmem::atomics::cpu;
using atomics::AmoOp;

namespace {

// What the caller wants back: the old value now (blocking), nothing (a non-fetching AMO: the
// backend may complete it at quiet), or the old value in *later by the next quiet (fetching _nbi).
enum class Want { Value, Nothing, Later };

// Runs `cpu_op` on the mapped word when CPU atomics may serve `pe`, otherwise the job's atomic
// backend (another node, or all-HW mode).
template <class T, class CpuOp>
[[gnu::always_inline]] inline T run(AmoOp op, const T *dest, T operand, T compare, Target t, const char *routine,
             CpuOp cpu_op, Want want, T *later) {
  if (want == Want::Later) check_local(later, sizeof(T), "fetch", routine);
  const int pe = t.pe;
  if (static_cast<unsigned>(pe) >= static_cast<unsigned>(rt.npes)) [[unlikely]]
    report_bad_pe(pe, routine);
  if (rt.cpu_atomics_ok[pe]) [[likely]] {
    char *word = amo_address(dest, sizeof(T), pe, routine);
    T old = cpu_op(word);
    if (op != AmoOp::Fetch) notify(pe);
    if (want == Want::Later) *later = old;  // complete at once intra-node
    return old;
  }
  // All-HW mode, another node: the inline path (rdma_inline.h) when it can take the op.
  if constexpr (sizeof(T) == 4 || sizeof(T) == 8) if (want != Want::Later) {
    uint64_t old;
    if (rdma_atomic_inline(t.lane, pe, dest, op, sizeof(T), cpu::to_bits(operand),
                           cpu::to_bits(compare), want == Want::Value ? &old : nullptr))
      return want == Want::Value ? cpu::from_bits<T>(static_cast<cpu::Bits<T>>(old)) : T{};
  }
  // The backend checks that the word is symmetric; SHMEM_DEBUG's bounds and alignment here.
  if (rt.debug) [[unlikely]]
    amo_address(dest, sizeof(T), pe, routine);
  if (!rt.remote_atomics) [[unlikely]]
    fatal(routine, "no atomic backend reaches PE %d (mode %s)", pe, atomics::mode_name(rt.mode));
  if (op == AmoOp::FetchAdd && sizeof(T) == 8 && want == Want::Nothing) {
    rt.remote_atomics->add_nbi(t.lane, pe, dest, cpu::to_bits(operand), routine);
    return T{};
  }
  T old{};
  void *out = want == Want::Value ? static_cast<void *>(&old)
              : want == Want::Later ? static_cast<void *>(later)
                                    : nullptr;
  atomics::AmoRequest r{op,  sizeof(T), pe,    dest,   cpu::to_bits(operand), cpu::to_bits(compare),
                        out, t.lane,    routine};
  rt.remote_atomics->execute(r, want != Want::Value);
  return old;
}

// Each operation: `want` and `later` as in run(); the value returned is the old one for
// Want::Value only.
template <class T>
[[gnu::always_inline]] inline T fetch(const T *src, Target to, const char *r, Want w = Want::Value, T *later = nullptr) {
  return run<T>(AmoOp::Fetch, src, T{}, T{}, to, r, [](char *x) { return cpu::fetch<T>(x); }, w,
                later);
}
template <class T>
[[gnu::always_inline]] inline void set(T *dest, T v, Target to, const char *r) {
  run<T>(AmoOp::Set, dest, v, T{}, to, r, [v](char *x) {
    cpu::set<T>(x, v);
    return T{};
  }, Want::Nothing, nullptr);
}
template <class T>
[[gnu::always_inline]] inline T swap(T *dest, T v, Target to, const char *r, Want w = Want::Value, T *later = nullptr) {
  return run<T>(AmoOp::Swap, dest, v, T{}, to, r, [v](char *x) { return cpu::swap<T>(x, v); }, w,
                later);
}
template <class T>
[[gnu::always_inline]] inline T compare_swap(T *dest, T cond, T v, Target to, const char *r, Want w = Want::Value,
                      T *later = nullptr) {
  return run<T>(AmoOp::CompareSwap, dest, v, cond, to, r,
                [cond, v](char *x) { return cpu::compare_swap<T>(x, cond, v); }, w, later);
}
template <class T>
[[gnu::always_inline]] inline T fetch_add(T *dest, T v, Target to, const char *r, Want w = Want::Value, T *later = nullptr) {
  return run<T>(AmoOp::FetchAdd, dest, v, T{}, to, r,
                [v](char *x) { return cpu::fetch_add<T>(x, v); }, w, later);
}
// The non-fetching add (add, inc). On 8-byte types, to another node's PE, the RDMA layer's
// inline path comes first (lib/core/rdma_inline.h): it calls nothing and everything else is a tail
// call, so the routine saves no registers (perf/hw/rc.sh counts its instructions).
template <class T>
[[gnu::noinline]] void add_general(T *dest, T v, Target to, const char *r) {
  fetch_add<T>(dest, v, to, r, Want::Nothing);
}
template <class T>
[[gnu::always_inline]] inline void add_no_fetch(T *dest, T v, Target to, const char *r) {
  if constexpr (sizeof(T) == 8) {
    const int pe = to.pe;
    // rt.rdma_add is set in the all-HW mode only (no CPU atomics then) and not under SHMEM_DEBUG.
    if (static_cast<unsigned>(pe) < static_cast<unsigned>(rt.npes) &&
        rdma_add_inline(to.lane, pe, dest, cpu::to_bits(v))) [[likely]]
      return;
    add_general<T>(dest, v, to, r);
  } else {
    fetch_add<T>(dest, v, to, r, Want::Nothing);
  }
}
template <class T>
[[gnu::always_inline]] inline T fetch_and(T *dest, T v, Target to, const char *r, Want w = Want::Value, T *later = nullptr) {
  return run<T>(AmoOp::FetchAnd, dest, v, T{}, to, r,
                [v](char *x) { return cpu::fetch_and<T>(x, v); }, w, later);
}
template <class T>
[[gnu::always_inline]] inline T fetch_or(T *dest, T v, Target to, const char *r, Want w = Want::Value, T *later = nullptr) {
  return run<T>(AmoOp::FetchOr, dest, v, T{}, to, r,
                [v](char *x) { return cpu::fetch_or<T>(x, v); }, w, later);
}
template <class T>
[[gnu::always_inline]] inline T fetch_xor(T *dest, T v, Target to, const char *r, Want w = Want::Value, T *later = nullptr) {
  return run<T>(AmoOp::FetchXor, dest, v, T{}, to, r,
                [v](char *x) { return cpu::fetch_xor<T>(x, v); }, w, later);
}

}  // namespace

extern "C" {

// Each routine exists twice from one definition: PREFIX pshmem (the default context, PE as
// given: the same code as before contexts) and PREFIX pshmem_ctx with a leading context argument
// whose team translates the PE.
#define NO_CTX()
#define WITH_CTX() shmem_ctx_t ctx,
#define PE_AS_GIVEN pe
#define PE_OF_CTX ctx_target(ctx, pe, HOSHMEM_ROUTINE)

#define AMO_STD_FORMS(PREFIX, CTX, PE, T, N)                                                      \
  T PREFIX##_##N##_atomic_compare_swap(CTX() T *dest, T cond, T value, int pe) {                   \
    return compare_swap<T>(dest, cond, value, PE, HOSHMEM_ROUTINE);                              \
  }                                                                                              \
  T PREFIX##_##N##_atomic_fetch_inc(CTX() T *dest, int pe) {                                       \
    return fetch_add<T>(dest, 1, PE, HOSHMEM_ROUTINE);                                           \
  }                                                                                              \
  void PREFIX##_##N##_atomic_inc(CTX() T *dest, int pe) {                                          \
    add_no_fetch<T>(dest, 1, PE, HOSHMEM_ROUTINE);                                                        \
  }                                                                                              \
  T PREFIX##_##N##_atomic_fetch_add(CTX() T *dest, T value, int pe) {                              \
    return fetch_add<T>(dest, value, PE, HOSHMEM_ROUTINE);                                       \
  }                                                                                              \
  void PREFIX##_##N##_atomic_add(CTX() T *dest, T value, int pe) {                                 \
    add_no_fetch<T>(dest, value, PE, HOSHMEM_ROUTINE);                                                    \
  }                                                                                              \
  void PREFIX##_##N##_atomic_compare_swap_nbi(CTX() T *fetch, T *dest, T cond, T value, int pe) {  \
    compare_swap<T>(dest, cond, value, PE, HOSHMEM_ROUTINE, Want::Later, fetch);                 \
  }                                                                                              \
  void PREFIX##_##N##_atomic_fetch_inc_nbi(CTX() T *fetch, T *dest, int pe) {                      \
    fetch_add<T>(dest, 1, PE, HOSHMEM_ROUTINE, Want::Later, fetch);                              \
  }                                                                                              \
  void PREFIX##_##N##_atomic_fetch_add_nbi(CTX() T *fetch, T *dest, T value, int pe) {             \
    fetch_add<T>(dest, value, PE, HOSHMEM_ROUTINE, Want::Later, fetch);                          \
  }
#define DEFINE_AMO_STD(P, T, N)                     \
  AMO_STD_FORMS(pshmem, NO_CTX, PE_AS_GIVEN, T, N) \
  AMO_STD_FORMS(pshmem_ctx, WITH_CTX, PE_OF_CTX, T, N)
HOSHMEM_AMO_STD_TYPES(DEFINE_AMO_STD, _)

#define AMO_EXT_FORMS(PREFIX, CTX, PE, T, N)                                                      \
  T PREFIX##_##N##_atomic_fetch(CTX() const T *source, int pe) {                                   \
    return fetch<T>(source, PE, HOSHMEM_ROUTINE);                                                \
  }                                                                                              \
  void PREFIX##_##N##_atomic_set(CTX() T *dest, T value, int pe) {                                 \
    set<T>(dest, value, PE, HOSHMEM_ROUTINE);                                                    \
  }                                                                                              \
  T PREFIX##_##N##_atomic_swap(CTX() T *dest, T value, int pe) {                                   \
    return swap<T>(dest, value, PE, HOSHMEM_ROUTINE);                                            \
  }                                                                                              \
  void PREFIX##_##N##_atomic_fetch_nbi(CTX() T *fetch_out, const T *source, int pe) {              \
    fetch<T>(source, PE, HOSHMEM_ROUTINE, Want::Later, fetch_out);                               \
  }                                                                                              \
  void PREFIX##_##N##_atomic_swap_nbi(CTX() T *fetch_out, T *dest, T value, int pe) {              \
    swap<T>(dest, value, PE, HOSHMEM_ROUTINE, Want::Later, fetch_out);                           \
  }
#define DEFINE_AMO_EXT(P, T, N)                     \
  AMO_EXT_FORMS(pshmem, NO_CTX, PE_AS_GIVEN, T, N) \
  AMO_EXT_FORMS(pshmem_ctx, WITH_CTX, PE_OF_CTX, T, N)
HOSHMEM_AMO_EXT_TYPES(DEFINE_AMO_EXT, _)

#define AMO_BIT_OP_FORMS(PREFIX, CTX, PE, T, N, OP)                                               \
  T PREFIX##_##N##_atomic_fetch_##OP(CTX() T *dest, T value, int pe) {                             \
    return fetch_##OP<T>(dest, value, PE, HOSHMEM_ROUTINE);                                      \
  }                                                                                              \
  void PREFIX##_##N##_atomic_##OP(CTX() T *dest, T value, int pe) {                                \
    fetch_##OP<T>(dest, value, PE, HOSHMEM_ROUTINE, Want::Nothing);                              \
  }                                                                                              \
  void PREFIX##_##N##_atomic_fetch_##OP##_nbi(CTX() T *fetch_out, T *dest, T value, int pe) {      \
    fetch_##OP<T>(dest, value, PE, HOSHMEM_ROUTINE, Want::Later, fetch_out);                     \
  }
#define AMO_BIT_FORMS(PREFIX, CTX, PE, T, N)                                            \
  AMO_BIT_OP_FORMS(PREFIX, CTX, PE, T, N, and) AMO_BIT_OP_FORMS(PREFIX, CTX, PE, T, N, or) \
  AMO_BIT_OP_FORMS(PREFIX, CTX, PE, T, N, xor)
#define DEFINE_AMO_BIT(P, T, N)                     \
  AMO_BIT_FORMS(pshmem, NO_CTX, PE_AS_GIVEN, T, N) \
  AMO_BIT_FORMS(pshmem_ctx, WITH_CTX, PE_OF_CTX, T, N)
HOSHMEM_AMO_BIT_TYPES(DEFINE_AMO_BIT, _)

// Deprecated (1.4) names.
#define DEFINE_AMO_OLD_STD(P, T, N)                                                               \
  T pshmem_##N##_cswap(T *dest, T cond, T value, int pe) {                                       \
    return compare_swap<T>(dest, cond, value, pe, HOSHMEM_ROUTINE);                              \
  }                                                                                              \
  T pshmem_##N##_finc(T *dest, int pe) { return fetch_add<T>(dest, 1, pe, HOSHMEM_ROUTINE); }    \
  void pshmem_##N##_inc(T *dest, int pe) { add_no_fetch<T>(dest, 1, pe, HOSHMEM_ROUTINE); }             \
  T pshmem_##N##_fadd(T *dest, T value, int pe) {                                                \
    return fetch_add<T>(dest, value, pe, HOSHMEM_ROUTINE);                                       \
  }                                                                                              \
  void pshmem_##N##_add(T *dest, T value, int pe) {                                              \
    add_no_fetch<T>(dest, value, pe, HOSHMEM_ROUTINE);                                                    \
  }
HOSHMEM_AMO_OLD_STD_TYPES(DEFINE_AMO_OLD_STD, _)

#define DEFINE_AMO_OLD_EXT(P, T, N)                                                               \
  T pshmem_##N##_fetch(const T *source, int pe) { return fetch<T>(source, pe, HOSHMEM_ROUTINE); } \
  void pshmem_##N##_set(T *dest, T value, int pe) { set<T>(dest, value, pe, HOSHMEM_ROUTINE); }  \
  T pshmem_##N##_swap(T *dest, T value, int pe) { return swap<T>(dest, value, pe, HOSHMEM_ROUTINE); }
HOSHMEM_AMO_OLD_EXT_TYPES(DEFINE_AMO_OLD_EXT, _)

}  // extern "C"

#define ALIAS_AMO_STD_FORMS(PREFIX, N)                                                          \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_compare_swap);                                             \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_fetch_inc);                                                \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_inc);                                                      \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_fetch_add);                                                \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_add);                                                      \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_compare_swap_nbi);                                         \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_fetch_inc_nbi);                                            \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_fetch_add_nbi);
#define ALIAS_AMO_STD(P, T, N) ALIAS_AMO_STD_FORMS(shmem, N) ALIAS_AMO_STD_FORMS(shmem_ctx, N)
HOSHMEM_AMO_STD_TYPES(ALIAS_AMO_STD, _)

#define ALIAS_AMO_EXT_FORMS(PREFIX, N)                                                          \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_fetch);                                                    \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_set);                                                      \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_swap);                                                     \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_fetch_nbi);                                                \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_swap_nbi);
#define ALIAS_AMO_EXT(P, T, N) ALIAS_AMO_EXT_FORMS(shmem, N) ALIAS_AMO_EXT_FORMS(shmem_ctx, N)
HOSHMEM_AMO_EXT_TYPES(ALIAS_AMO_EXT, _)

#define ALIAS_AMO_BIT_OP(PREFIX, N, OP)                                                         \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_fetch_##OP);                                               \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_##OP);                                                     \
  HOSHMEM_ALIAS(PREFIX##_##N##_atomic_fetch_##OP##_nbi);
#define ALIAS_AMO_BIT_FORMS(PREFIX, N) \
  ALIAS_AMO_BIT_OP(PREFIX, N, and) ALIAS_AMO_BIT_OP(PREFIX, N, or) ALIAS_AMO_BIT_OP(PREFIX, N, xor)
#define ALIAS_AMO_BIT(P, T, N) ALIAS_AMO_BIT_FORMS(shmem, N) ALIAS_AMO_BIT_FORMS(shmem_ctx, N)
HOSHMEM_AMO_BIT_TYPES(ALIAS_AMO_BIT, _)

#define ALIAS_AMO_OLD_STD(P, T, N)                                                               \
  HOSHMEM_ALIAS(shmem_##N##_cswap);                                                              \
  HOSHMEM_ALIAS(shmem_##N##_finc);                                                               \
  HOSHMEM_ALIAS(shmem_##N##_inc);                                                                \
  HOSHMEM_ALIAS(shmem_##N##_fadd);                                                               \
  HOSHMEM_ALIAS(shmem_##N##_add);
HOSHMEM_AMO_OLD_STD_TYPES(ALIAS_AMO_OLD_STD, _)

#define ALIAS_AMO_OLD_EXT(P, T, N)                                                               \
  HOSHMEM_ALIAS(shmem_##N##_fetch);                                                              \
  HOSHMEM_ALIAS(shmem_##N##_set);                                                                \
  HOSHMEM_ALIAS(shmem_##N##_swap);
HOSHMEM_AMO_OLD_EXT_TYPES(ALIAS_AMO_OLD_EXT, _)
