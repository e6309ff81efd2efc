// Signals: put-with-signal (blocking and _nbi; typed, sized, mem; with and without a context),
// signal_fetch, and the 1.6 signal_add / signal_set. (signal_wait_until is with the other waits
// in p2p.cc.)
//
// The signal word is a 64-bit atomic updated after the data: a SET is a release store, an ADD a
// fetch-add (seq_cst, so also a release), so a PE that sees the new signal value with an acquire
// load also sees that call's data. Intra-node the _nbi forms complete before they return.
#include <atomic>
#include <cstring>

#include "lib/api/api.h"
#include "lib/atomics/cpu_atomics.h"
#include "lib/core/net.h"
#include "lib/core/team.h"

using namespace hoshmem;
namespace cpu = hoshmem::atomics::cpu;
using atomics::AmoOp;

namespace {

inline void check_sig_op(int sig_op, const char *routine) {
  if (sig_op != SHMEM_SIGNAL_SET && sig_op != SHMEM_SIGNAL_ADD) [[unlikely]]
    fatal(routine, "invalid sig_op %d (use SHMEM_SIGNAL_SET or SHMEM_SIGNAL_ADD)", sig_op);
}

// Applies the signal to PE `pe`'s word, ordered after every store this thread made before.
void update_signal(uint64_t *sig_addr, uint64_t signal, int sig_op, Target t,
                   const char *routine) {
  const int pe = t.pe;
  char *word = amo_address(sig_addr, sizeof(uint64_t), pe, routine);
  if (rt.cpu_atomics_ok[pe]) [[likely]] {
    if (sig_op == SHMEM_SIGNAL_SET)
      cpu::set<uint64_t>(word, signal);  // release store
    else
      cpu::fetch_add<uint64_t>(word, signal);
    notify(pe);
    return;
  }
  if (!rt.remote_atomics)
    fatal(routine, "no atomic backend reaches PE %d (mode %s)", pe, atomics::mode_name(rt.mode));
  // The data went by plain stores: make them globally visible before the backend's atomic. Data
  // that went by RDMA writes: the backend orders the atomic after them (over RC the atomic
  // carries the fence flag; over UD the writes complete first).
  std::atomic_thread_fence(std::memory_order_release);
  if (!rt.control[pe]) rt.remote_atomics->fence(t.lane, pe);
  atomics::AmoRequest r{sig_op == SHMEM_SIGNAL_SET ? AmoOp::Set : AmoOp::FetchAdd,
                        sizeof(uint64_t),
                        pe,
                        sig_addr,
                        signal,
                        0,
                        nullptr,
                        t.lane};
  rt.remote_atomics->execute(r, true);  // nothing to fetch: complete at quiet
}

void put_signal(void *dest, const void *source, size_t bytes, uint64_t *sig_addr,
                uint64_t signal, int sig_op, Target t, const char *routine) {
  check_sig_op(sig_op, routine);
  if (rt.debug) [[unlikely]] {
    // Both are symmetric addresses of the same PE's objects, so overlap is a range test.
    auto d = reinterpret_cast<uintptr_t>(dest), s = reinterpret_cast<uintptr_t>(sig_addr);
    if (bytes && d < s + sizeof(uint64_t) && s < d + bytes)
      fatal(routine, "dest [%p, +%zu) overlaps sig_addr %p", dest, bytes,
            static_cast<void *>(sig_addr));
  }
  if (bytes) {
    check_local(source, bytes, "source", routine);
    if (char *to = remote_address(dest, bytes, t.pe, routine))
      memcpy(to, source, bytes);
    else
      net_put(t.lane, t.pe, dest, source, bytes, false);
  }
  update_signal(sig_addr, signal, sig_op, t, routine);
}

}  // namespace

extern "C" {

// Blocking and _nbi share one body: intra-node both are complete on return.
#define DEFINE_PUT_SIGNAL_ONE(NAME, CTXNAME, T, SIZE)                                             \
  void p##NAME(T *dest, const T *source, size_t nelems, uint64_t *sig_addr, uint64_t signal,     \
               int sig_op, int pe) {                                                             \
    put_signal(dest, source, nelems * (SIZE), sig_addr, signal, sig_op, pe, HOSHMEM_ROUTINE);    \
  }                                                                                              \
  void p##CTXNAME(shmem_ctx_t ctx, T *dest, const T *source, size_t nelems, uint64_t *sig_addr,  \
                  uint64_t signal, int sig_op, int pe) {                                         \
    put_signal(dest, source, nelems * (SIZE), sig_addr, signal, sig_op,                          \
               ctx_target(ctx, pe, HOSHMEM_ROUTINE), HOSHMEM_ROUTINE);                         \
  }

#define DEFINE_PUT_SIGNAL_TYPED(P, T, N)                                                          \
  DEFINE_PUT_SIGNAL_ONE(shmem_##N##_put_signal, shmem_ctx_##N##_put_signal, T, sizeof(T))         \
  DEFINE_PUT_SIGNAL_ONE(shmem_##N##_put_signal_nbi, shmem_ctx_##N##_put_signal_nbi, T, sizeof(T))
HOSHMEM_RMA_TYPES(DEFINE_PUT_SIGNAL_TYPED, _)

#define DEFINE_PUT_SIGNAL_SIZED(P, B)                                                             \
  DEFINE_PUT_SIGNAL_ONE(shmem_put##B##_signal, shmem_ctx_put##B##_signal, void, (B) / 8)          \
  DEFINE_PUT_SIGNAL_ONE(shmem_put##B##_signal_nbi, shmem_ctx_put##B##_signal_nbi, void, (B) / 8)
HOSHMEM_RMA_SIZES(DEFINE_PUT_SIGNAL_SIZED, _)

DEFINE_PUT_SIGNAL_ONE(shmem_putmem_signal, shmem_ctx_putmem_signal, void, 1)
DEFINE_PUT_SIGNAL_ONE(shmem_putmem_signal_nbi, shmem_ctx_putmem_signal_nbi, void, 1)

uint64_t pshmem_signal_fetch(const uint64_t *sig_addr) {
  const char *word = amo_address(sig_addr, sizeof(uint64_t), rt.me, HOSHMEM_ROUTINE);
  return cpu::fetch<uint64_t>(word);  // acquire: data put before the signal is visible after
}

void pshmem_signal_add(uint64_t *sig_addr, uint64_t signal, int pe) {
  update_signal(sig_addr, signal, SHMEM_SIGNAL_ADD, pe, HOSHMEM_ROUTINE);
}
void pshmem_signal_set(uint64_t *sig_addr, uint64_t signal, int pe) {
  update_signal(sig_addr, signal, SHMEM_SIGNAL_SET, pe, HOSHMEM_ROUTINE);
}
void pshmem_ctx_signal_add(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe) {
  update_signal(sig_addr, signal, SHMEM_SIGNAL_ADD, ctx_target(ctx, pe, HOSHMEM_ROUTINE),
                HOSHMEM_ROUTINE);
}
void pshmem_ctx_signal_set(shmem_ctx_t ctx, uint64_t *sig_addr, uint64_t signal, int pe) {
  update_signal(sig_addr, signal, SHMEM_SIGNAL_SET, ctx_target(ctx, pe, HOSHMEM_ROUTINE),
                HOSHMEM_ROUTINE);
}

}  // extern "C"

#define ALIAS_PUT_SIGNAL_TYPED(P, T, N)           \
  HOSHMEM_ALIAS(shmem_##N##_put_signal);          \
  HOSHMEM_ALIAS(shmem_##N##_put_signal_nbi);      \
  HOSHMEM_ALIAS(shmem_ctx_##N##_put_signal);      \
  HOSHMEM_ALIAS(shmem_ctx_##N##_put_signal_nbi);
HOSHMEM_RMA_TYPES(ALIAS_PUT_SIGNAL_TYPED, _)
#define ALIAS_PUT_SIGNAL_SIZED(P, B)              \
  HOSHMEM_ALIAS(shmem_put##B##_signal);           \
  HOSHMEM_ALIAS(shmem_put##B##_signal_nbi);       \
  HOSHMEM_ALIAS(shmem_ctx_put##B##_signal);       \
  HOSHMEM_ALIAS(shmem_ctx_put##B##_signal_nbi);
HOSHMEM_RMA_SIZES(ALIAS_PUT_SIGNAL_SIZED, _)
HOSHMEM_ALIAS(shmem_putmem_signal);
HOSHMEM_ALIAS(shmem_putmem_signal_nbi);
HOSHMEM_ALIAS(shmem_ctx_putmem_signal);
HOSHMEM_ALIAS(shmem_ctx_putmem_signal_nbi);
HOSHMEM_ALIAS(shmem_signal_fetch);
HOSHMEM_ALIAS(shmem_signal_add);
HOSHMEM_ALIAS(shmem_signal_set);
HOSHMEM_ALIAS(shmem_ctx_signal_add);
HOSHMEM_ALIAS(shmem_ctx_signal_set);
