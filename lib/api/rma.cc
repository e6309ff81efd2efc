// Remote memory access: put, get, p, g, iput, iget and their _nbi forms. Intra-node they are
// loads and stores on the peer's memory mapped here, so a blocking put is complete (and the
// _nbi forms are complete at once, trivially satisfying quiet). A PE of another node is reached
// by RDMA (lib/core/rdma.h): puts complete at quiet, _nbi gets too.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "lib/api/api.h"
#include "lib/core/net.h"
#include "lib/core/rdma_inline.h"
#include "lib/core/team.h"

using namespace hoshmem;

namespace {

inline void put_bytes(void *dest, const void *source, size_t bytes, Target t, const char *routine,
                      bool nbi = false) {
  if (bytes == 0) return;
  check_local(source, bytes, "source", routine);
  if (rdma_put_inline(t.lane, t.pe, dest, source, bytes)) return;  // small, to another node
  char *to = remote_address(dest, bytes, t.pe, routine);
  if (!to) [[unlikely]]
    return net_put(t.lane, t.pe, dest, source, bytes, nbi);
  hoshmem_fast_put_copy(to, source, bytes);  // include/shmem/shmem_inline.h
  notify(t.pe);
}

inline void get_bytes(void *dest, const void *source, size_t bytes, Target t, const char *routine,
                      bool nbi = false) {
  if (bytes == 0) return;
  check_local(dest, bytes, "dest", routine);
  if (!nbi && rdma_get_inline(t.lane, t.pe, dest, source, bytes)) return;  // small, another node
  const char *from = remote_address(source, bytes, t.pe, routine);
  if (!from) [[unlikely]]
    return net_get(t.lane, t.pe, dest, source, bytes, nbi);
  hoshmem_fast_get_bytes(dest, from, bytes);  // include/shmem/shmem_inline.h
}

inline void check_strides(ptrdiff_t dst, ptrdiff_t sst, const char *routine) {
  if (dst < 1 || sst < 1) [[unlikely]]
    fatal(routine, "strides must be positive (dst=%td, sst=%td)", dst, sst);
}

// Strided transfers to another node whose remote side is contiguous: a message per
// kGatherBytes, not one per element or block (a 1 MiB iput of longs was 65,536 RDMA writes, each
// a packet and an ACK: minutes over soft-RoCE). Blocks of at least this size go one by one.
constexpr size_t kGatherBytes = 16 * 1024;

// `n` blocks of `block` bytes from `from` (block i at i * sst bytes) to `dest`, back to back on
// PE t.pe. Blocking: the source is reusable on return, as the chunk buffer must be.
void put_gathered(Target t, char *dest, const char *from, size_t block, size_t sst, size_t n) {
  if (sst == block) return net_put(t.lane, t.pe, dest, from, block * n, false);
  char chunk[kGatherBytes];
  const size_t per = kGatherBytes / block;
  for (size_t i = 0; i < n; i += per) {
    const size_t k = std::min(per, n - i);
    for (size_t j = 0; j < k; ++j) memcpy(chunk + j * block, from + (i + j) * sst, block);
    net_put(t.lane, t.pe, dest + i * block, chunk, k * block, false);
  }
}

// The reverse: `n` blocks back to back at `src` on PE t.pe to `to` (block i at i * dst bytes).
void get_scattered(Target t, char *to, const char *src, size_t block, size_t dst, size_t n) {
  if (dst == block) return net_get(t.lane, t.pe, to, src, block * n, false);
  char chunk[kGatherBytes];
  const size_t per = kGatherBytes / block;
  for (size_t i = 0; i < n; i += per) {
    const size_t k = std::min(per, n - i);
    net_get(t.lane, t.pe, chunk, src + i * block, k * block, false);  // delivered on return
    for (size_t j = 0; j < k; ++j) memcpy(to + (i + j) * dst, chunk + j * block, block);
  }
}

// Strided: element i goes from source[i * sst] to dest[i * dst] (strides in elements).
template <size_t Size>
void iput_elems(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                Target t, const char *routine) {
  if (nelems == 0) return;
  check_strides(dst, sst, routine);
  const size_t span = ((nelems - 1) * static_cast<size_t>(dst) + 1) * Size;
  char *to = remote_address(dest, span, t.pe, routine);
  auto *from = static_cast<const char *>(source);
  if (!to) [[unlikely]] {  // another node
    if (dst == 1)
      return put_gathered(t, static_cast<char *>(dest), from, Size, sst * Size, nelems);
    for (size_t i = 0; i < nelems; ++i)  // one RDMA write per element
      net_put(t.lane, t.pe, static_cast<char *>(dest) + i * dst * Size, from + i * sst * Size,
               Size, false);
    return;
  }
  for (size_t i = 0; i < nelems; ++i)
    memcpy(to + i * dst * Size, from + i * sst * Size, Size);
  notify(t.pe);
}

template <size_t Size>
void iget_elems(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                Target t, const char *routine) {
  if (nelems == 0) return;
  check_strides(dst, sst, routine);
  const size_t span = ((nelems - 1) * static_cast<size_t>(sst) + 1) * Size;
  const char *from = remote_address(source, span, t.pe, routine);
  auto *to = static_cast<char *>(dest);
  if (!from) [[unlikely]] {  // another node
    const char *src = static_cast<const char *>(source);
    if (sst == 1) return get_scattered(t, to, src, Size, dst * Size, nelems);
    // one RDMA read per element, all in flight at once
    for (size_t i = 0; i < nelems; ++i)
      net_get(t.lane, t.pe, to + i * dst * Size, src + i * sst * Size, Size, true);
    return rt.remote_atomics->quiet(t.lane);
  }
  for (size_t i = 0; i < nelems; ++i)
    memcpy(to + i * dst * Size, from + i * sst * Size, Size);
}

// 1.6 interleaved blocks: block i of bsize elements goes from source[i * sst] to dest[i * dst]
// (strides in elements, at least bsize).
template <size_t Size>
void ib_check(ptrdiff_t dst, ptrdiff_t sst, size_t bsize, const char *routine) {
  if (dst < 0 || sst < 0 || static_cast<size_t>(dst) < bsize || static_cast<size_t>(sst) < bsize)
    [[unlikely]]
    fatal(routine, "strides must be at least the block size (dst=%td, sst=%td, bsize=%zu)", dst,
          sst, bsize);
}

template <size_t Size>
void ibput_blocks(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,
                  size_t nblocks, Target t, const char *routine) {
  if (bsize == 0 || nblocks == 0) return;
  ib_check<Size>(dst, sst, bsize, routine);
  check_local(source, bsize * Size, "source", routine);
  const size_t span = ((nblocks - 1) * static_cast<size_t>(dst) + bsize) * Size;
  char *to = remote_address(dest, span, t.pe, routine);
  auto *from = static_cast<const char *>(source);
  if (!to) [[unlikely]] {  // another node
    if (static_cast<size_t>(dst) == bsize && bsize * Size < kGatherBytes)
      return put_gathered(t, static_cast<char *>(dest), from, bsize * Size, sst * Size, nblocks);
    for (size_t i = 0; i < nblocks; ++i)
      net_put(t.lane, t.pe, static_cast<char *>(dest) + i * dst * Size, from + i * sst * Size,
               bsize * Size, false);
    return;
  }
  for (size_t i = 0; i < nblocks; ++i)
    hoshmem_fast_put_copy(to + i * dst * Size, from + i * sst * Size, bsize * Size);
  notify(t.pe);
}

template <size_t Size>
void ibget_blocks(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t bsize,
                  size_t nblocks, Target t, const char *routine) {
  if (bsize == 0 || nblocks == 0) return;
  ib_check<Size>(dst, sst, bsize, routine);
  check_local(dest, bsize * Size, "dest", routine);
  const size_t span = ((nblocks - 1) * static_cast<size_t>(sst) + bsize) * Size;
  const char *from = remote_address(source, span, t.pe, routine);
  auto *to = static_cast<char *>(dest);
  if (!from) [[unlikely]] {  // another node
    const char *src = static_cast<const char *>(source);
    if (static_cast<size_t>(sst) == bsize && bsize * Size < kGatherBytes)
      return get_scattered(t, to, src, bsize * Size, dst * Size, nblocks);
    // one RDMA read per block, all in flight at once
    for (size_t i = 0; i < nblocks; ++i)
      net_get(t.lane, t.pe, to + i * dst * Size, src + i * sst * Size, bsize * Size, true);
    return rt.remote_atomics->quiet(t.lane);
  }
  for (size_t i = 0; i < nblocks; ++i)
    memcpy(to + i * dst * Size, from + i * sst * Size, bsize * Size);
}

template <class T>
inline void p_value(T *dest, T value, Target t, const char *routine) {
  if (rdma_put_inline(t.lane, t.pe, dest, &value, sizeof(T))) return;  // to another node
  char *to = remote_address(dest, sizeof(T), t.pe, routine);
  if (!to) [[unlikely]]
    return net_put(t.lane, t.pe, dest, &value, sizeof(T), false);
  memcpy(to, &value, sizeof(T));
  notify(t.pe);
}

template <class T>
inline T g_value(const T *source, Target t, const char *routine) {
  T value;
  if (rdma_get_inline(t.lane, t.pe, &value, source, sizeof(T))) return value;  // another node
  const char *from = remote_address(source, sizeof(T), t.pe, routine);
  if (!from) [[unlikely]] {
    net_get(t.lane, t.pe, &value, source, sizeof(T), false);
    return value;
  }
  memcpy(&value, from, sizeof(T));
  return value;
}

}  // namespace

extern "C" {

// Every routine exists twice from one definition: PREFIX pshmem with CTX() empty and the PE as
// given (the default context: exactly the code it had before contexts), and PREFIX pshmem_ctx
// with a leading context argument whose team translates the PE.
#define NO_CTX()
#define WITH_CTX() shmem_ctx_t ctx,
#define PE_AS_GIVEN pe
#define PE_OF_CTX ctx_target(ctx, pe, HOSHMEM_ROUTINE)

#define RMA_TYPED_FORMS(PREFIX, CTX, PE, T, N)                                                    \
  void PREFIX##_##N##_put(CTX() T *dest, const T *source, size_t nelems, int pe) {                 \
    put_bytes(dest, source, nelems * sizeof(T), PE, HOSHMEM_ROUTINE);                            \
  }                                                                                              \
  void PREFIX##_##N##_put_nbi(CTX() T *dest, const T *source, size_t nelems, int pe) {             \
    put_bytes(dest, source, nelems * sizeof(T), PE, HOSHMEM_ROUTINE, true);                      \
  }                                                                                              \
  void PREFIX##_##N##_get(CTX() T *dest, const T *source, size_t nelems, int pe) {                 \
    get_bytes(dest, source, nelems * sizeof(T), PE, HOSHMEM_ROUTINE);                            \
  }                                                                                              \
  void PREFIX##_##N##_get_nbi(CTX() T *dest, const T *source, size_t nelems, int pe) {             \
    get_bytes(dest, source, nelems * sizeof(T), PE, HOSHMEM_ROUTINE, true);                      \
  }                                                                                              \
  void PREFIX##_##N##_p(CTX() T *dest, T value, int pe) { p_value(dest, value, PE, HOSHMEM_ROUTINE); } \
  T PREFIX##_##N##_g(CTX() const T *source, int pe) { return g_value(source, PE, HOSHMEM_ROUTINE); } \
  void PREFIX##_##N##_iput(CTX() T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,           \
                           size_t nelems, int pe) {                                              \
    iput_elems<sizeof(T)>(dest, source, dst, sst, nelems, PE, HOSHMEM_ROUTINE);                  \
  }                                                                                              \
  void PREFIX##_##N##_iget(CTX() T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,           \
                           size_t nelems, int pe) {                                              \
    iget_elems<sizeof(T)>(dest, source, dst, sst, nelems, PE, HOSHMEM_ROUTINE);                  \
  }                                                                                              \
  void PREFIX##_##N##_ibput(CTX() T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,          \
                            size_t bsize, size_t nblocks, int pe) {                              \
    ibput_blocks<sizeof(T)>(dest, source, dst, sst, bsize, nblocks, PE, HOSHMEM_ROUTINE);        \
  }                                                                                              \
  void PREFIX##_##N##_ibget(CTX() T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst,          \
                            size_t bsize, size_t nblocks, int pe) {                              \
    ibget_blocks<sizeof(T)>(dest, source, dst, sst, bsize, nblocks, PE, HOSHMEM_ROUTINE); \
  }
#define DEFINE_RMA_TYPED(P, T, N)                     \
  RMA_TYPED_FORMS(pshmem, NO_CTX, PE_AS_GIVEN, T, N) \
  RMA_TYPED_FORMS(pshmem_ctx, WITH_CTX, PE_OF_CTX, T, N)
HOSHMEM_RMA_TYPES(DEFINE_RMA_TYPED, _)

#define RMA_SIZED_FORMS(PREFIX, CTX, PE, B)                                                       \
  void PREFIX##_put##B(CTX() void *dest, const void *source, size_t nelems, int pe) {              \
    put_bytes(dest, source, nelems * (B / 8), PE, HOSHMEM_ROUTINE);                              \
  }                                                                                              \
  void PREFIX##_put##B##_nbi(CTX() void *dest, const void *source, size_t nelems, int pe) {        \
    put_bytes(dest, source, nelems * (B / 8), PE, HOSHMEM_ROUTINE, true);                        \
  }                                                                                              \
  void PREFIX##_get##B(CTX() void *dest, const void *source, size_t nelems, int pe) {              \
    get_bytes(dest, source, nelems * (B / 8), PE, HOSHMEM_ROUTINE);                              \
  }                                                                                              \
  void PREFIX##_get##B##_nbi(CTX() void *dest, const void *source, size_t nelems, int pe) {        \
    get_bytes(dest, source, nelems * (B / 8), PE, HOSHMEM_ROUTINE, true);                        \
  }                                                                                              \
  void PREFIX##_iput##B(CTX() void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,        \
                        size_t nelems, int pe) {                                                 \
    iput_elems<B / 8>(dest, source, dst, sst, nelems, PE, HOSHMEM_ROUTINE);                      \
  }                                                                                              \
  void PREFIX##_iget##B(CTX() void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,        \
                        size_t nelems, int pe) {                                                 \
    iget_elems<B / 8>(dest, source, dst, sst, nelems, PE, HOSHMEM_ROUTINE);                      \
  }                                                                                              \
  void PREFIX##_ibput##B(CTX() void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,       \
                         size_t bsize, size_t nblocks, int pe) {                                 \
    ibput_blocks<B / 8>(dest, source, dst, sst, bsize, nblocks, PE, HOSHMEM_ROUTINE);            \
  }                                                                                              \
  void PREFIX##_ibget##B(CTX() void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,       \
                         size_t bsize, size_t nblocks, int pe) {                                 \
    ibget_blocks<B / 8>(dest, source, dst, sst, bsize, nblocks, PE, HOSHMEM_ROUTINE);            \
  }
#define DEFINE_RMA_SIZED(P, B)                     \
  RMA_SIZED_FORMS(pshmem, NO_CTX, PE_AS_GIVEN, B) \
  RMA_SIZED_FORMS(pshmem_ctx, WITH_CTX, PE_OF_CTX, B)
HOSHMEM_RMA_SIZES(DEFINE_RMA_SIZED, _)

#define RMA_MEM_FORMS(PREFIX, CTX, PE)                                                           \
  void PREFIX##_putmem(CTX() void *dest, const void *source, size_t nelems, int pe) {              \
    put_bytes(dest, source, nelems, PE, HOSHMEM_ROUTINE);                                        \
  }                                                                                              \
  void PREFIX##_putmem_nbi(CTX() void *dest, const void *source, size_t nelems, int pe) {          \
    put_bytes(dest, source, nelems, PE, HOSHMEM_ROUTINE, true);                                  \
  }                                                                                              \
  void PREFIX##_getmem(CTX() void *dest, const void *source, size_t nelems, int pe) {              \
    get_bytes(dest, source, nelems, PE, HOSHMEM_ROUTINE);                                        \
  }                                                                                              \
  void PREFIX##_getmem_nbi(CTX() void *dest, const void *source, size_t nelems, int pe) {          \
    get_bytes(dest, source, nelems, PE, HOSHMEM_ROUTINE, true);                                  \
  }
RMA_MEM_FORMS(pshmem, NO_CTX, PE_AS_GIVEN)
RMA_MEM_FORMS(pshmem_ctx, WITH_CTX, PE_OF_CTX)

}  // extern "C"

#define ALIAS_RMA_TYPED_FORMS(PREFIX, N)                                                        \
  HOSHMEM_ALIAS(PREFIX##_##N##_put);                                                             \
  HOSHMEM_ALIAS(PREFIX##_##N##_put_nbi);                                                         \
  HOSHMEM_ALIAS(PREFIX##_##N##_get);                                                             \
  HOSHMEM_ALIAS(PREFIX##_##N##_get_nbi);                                                         \
  HOSHMEM_ALIAS(PREFIX##_##N##_p);                                                               \
  HOSHMEM_ALIAS(PREFIX##_##N##_g);                                                               \
  HOSHMEM_ALIAS(PREFIX##_##N##_iput);                                                            \
  HOSHMEM_ALIAS(PREFIX##_##N##_iget);                                                            \
  HOSHMEM_ALIAS(PREFIX##_##N##_ibput);                                                           \
  HOSHMEM_ALIAS(PREFIX##_##N##_ibget);
#define ALIAS_RMA_TYPED(P, T, N) ALIAS_RMA_TYPED_FORMS(shmem, N) ALIAS_RMA_TYPED_FORMS(shmem_ctx, N)
HOSHMEM_RMA_TYPES(ALIAS_RMA_TYPED, _)

#define ALIAS_RMA_SIZED_FORMS(PREFIX, B)                                                        \
  HOSHMEM_ALIAS(PREFIX##_put##B);                                                                \
  HOSHMEM_ALIAS(PREFIX##_put##B##_nbi);                                                          \
  HOSHMEM_ALIAS(PREFIX##_get##B);                                                                \
  HOSHMEM_ALIAS(PREFIX##_get##B##_nbi);                                                          \
  HOSHMEM_ALIAS(PREFIX##_iput##B);                                                               \
  HOSHMEM_ALIAS(PREFIX##_iget##B);                                                               \
  HOSHMEM_ALIAS(PREFIX##_ibput##B);                                                              \
  HOSHMEM_ALIAS(PREFIX##_ibget##B);
#define ALIAS_RMA_SIZED(P, B) ALIAS_RMA_SIZED_FORMS(shmem, B) ALIAS_RMA_SIZED_FORMS(shmem_ctx, B)
HOSHMEM_RMA_SIZES(ALIAS_RMA_SIZED, _)

#define ALIAS_RMA_MEM_FORMS(PREFIX)       \
  HOSHMEM_ALIAS(PREFIX##_putmem);         \
  HOSHMEM_ALIAS(PREFIX##_putmem_nbi);     \
  HOSHMEM_ALIAS(PREFIX##_getmem);         \
  HOSHMEM_ALIAS(PREFIX##_getmem_nbi);
ALIAS_RMA_MEM_FORMS(shmem)
ALIAS_RMA_MEM_FORMS(shmem_ctx)
