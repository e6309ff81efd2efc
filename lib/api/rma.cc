// Remote memory access: put, get, p, g, iput, iget and their _nbi forms. Intra-node they are
// loads and stores on the peer's memory mapped here, so a blocking put is complete (and the
// _nbi forms are complete at once, trivially satisfying quiet).
#include <cstring>

#include "lib/api/api.h"

using namespace hoshmem;

namespace {

inline void put_bytes(void *dest, const void *source, size_t bytes, int pe, const char *routine) {
  if (bytes == 0) return;
  check_local(source, bytes, "source", routine);
  char *to = remote_address(dest, bytes, pe, routine);
  memcpy(to, source, bytes);
  notify(pe);
}

inline void get_bytes(void *dest, const void *source, size_t bytes, int pe, const char *routine) {
  if (bytes == 0) return;
  check_local(dest, bytes, "dest", routine);
  const char *from = remote_address(source, bytes, pe, routine);
  memcpy(dest, from, bytes);
}

inline void check_strides(ptrdiff_t dst, ptrdiff_t sst, const char *routine) {
  if (dst < 1 || sst < 1) [[unlikely]]
    fatal(routine, "strides must be positive (dst=%td, sst=%td)", dst, sst);
}

// Strided: element i goes from source[i * sst] to dest[i * dst] (strides in elements).
template <size_t Size>
void iput_elems(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                int pe, const char *routine) {
  if (nelems == 0) return;
  check_strides(dst, sst, routine);
  const size_t span = ((nelems - 1) * static_cast<size_t>(dst) + 1) * Size;
  char *to = remote_address(dest, span, pe, routine);
  auto *from = static_cast<const char *>(source);
  for (size_t i = 0; i < nelems; ++i)
    memcpy(to + i * dst * Size, from + i * sst * Size, Size);
  notify(pe);
}

template <size_t Size>
void iget_elems(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,
                int pe, const char *routine) {
  if (nelems == 0) return;
  check_strides(dst, sst, routine);
  const size_t span = ((nelems - 1) * static_cast<size_t>(sst) + 1) * Size;
  const char *from = remote_address(source, span, pe, routine);
  auto *to = static_cast<char *>(dest);
  for (size_t i = 0; i < nelems; ++i)
    memcpy(to + i * dst * Size, from + i * sst * Size, Size);
}

template <class T>
inline void p_value(T *dest, T value, int pe, const char *routine) {
  char *to = remote_address(dest, sizeof(T), pe, routine);
  memcpy(to, &value, sizeof(T));
  notify(pe);
}

template <class T>
inline T g_value(const T *source, int pe, const char *routine) {
  const char *from = remote_address(source, sizeof(T), pe, routine);
  T value;
  memcpy(&value, from, sizeof(T));
  return value;
}

}  // namespace

extern "C" {

#define DEFINE_RMA_TYPED(P, T, N)                                                                 \
  void pshmem_##N##_put(T *dest, const T *source, size_t nelems, int pe) {                       \
    put_bytes(dest, source, nelems * sizeof(T), pe, HOSHMEM_ROUTINE);                            \
  }                                                                                              \
  void pshmem_##N##_put_nbi(T *dest, const T *source, size_t nelems, int pe) {                   \
    put_bytes(dest, source, nelems * sizeof(T), pe, HOSHMEM_ROUTINE);                            \
  }                                                                                              \
  void pshmem_##N##_get(T *dest, const T *source, size_t nelems, int pe) {                       \
    get_bytes(dest, source, nelems * sizeof(T), pe, HOSHMEM_ROUTINE);                            \
  }                                                                                              \
  void pshmem_##N##_get_nbi(T *dest, const T *source, size_t nelems, int pe) {                   \
    get_bytes(dest, source, nelems * sizeof(T), pe, HOSHMEM_ROUTINE);                            \
  }                                                                                              \
  void pshmem_##N##_p(T *dest, T value, int pe) { p_value(dest, value, pe, HOSHMEM_ROUTINE); }   \
  T pshmem_##N##_g(const T *source, int pe) { return g_value(source, pe, HOSHMEM_ROUTINE); }     \
  void pshmem_##N##_iput(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
                         int pe) {                                                               \
    iput_elems<sizeof(T)>(dest, source, dst, sst, nelems, pe, HOSHMEM_ROUTINE);                  \
  }                                                                                              \
  void pshmem_##N##_iget(T *dest, const T *source, ptrdiff_t dst, ptrdiff_t sst, size_t nelems,  \
                         int pe) {                                                               \
    iget_elems<sizeof(T)>(dest, source, dst, sst, nelems, pe, HOSHMEM_ROUTINE);                  \
  }
HOSHMEM_RMA_TYPES(DEFINE_RMA_TYPED, _)

#define DEFINE_RMA_SIZED(P, B)                                                                   \
  void pshmem_put##B(void *dest, const void *source, size_t nelems, int pe) {                   \
    put_bytes(dest, source, nelems * (B / 8), pe, HOSHMEM_ROUTINE);                              \
  }                                                                                              \
  void pshmem_put##B##_nbi(void *dest, const void *source, size_t nelems, int pe) {             \
    put_bytes(dest, source, nelems * (B / 8), pe, HOSHMEM_ROUTINE);                              \
  }                                                                                              \
  void pshmem_get##B(void *dest, const void *source, size_t nelems, int pe) {                   \
    get_bytes(dest, source, nelems * (B / 8), pe, HOSHMEM_ROUTINE);                              \
  }                                                                                              \
  void pshmem_get##B##_nbi(void *dest, const void *source, size_t nelems, int pe) {             \
    get_bytes(dest, source, nelems * (B / 8), pe, HOSHMEM_ROUTINE);                              \
  }                                                                                              \
  void pshmem_iput##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,             \
                      size_t nelems, int pe) {                                                   \
    iput_elems<B / 8>(dest, source, dst, sst, nelems, pe, HOSHMEM_ROUTINE);                      \
  }                                                                                              \
  void pshmem_iget##B(void *dest, const void *source, ptrdiff_t dst, ptrdiff_t sst,             \
                      size_t nelems, int pe) {                                                   \
    iget_elems<B / 8>(dest, source, dst, sst, nelems, pe, HOSHMEM_ROUTINE);                      \
  }
HOSHMEM_RMA_SIZES(DEFINE_RMA_SIZED, _)

void pshmem_putmem(void *dest, const void *source, size_t nelems, int pe) {
  put_bytes(dest, source, nelems, pe, HOSHMEM_ROUTINE);
}
void pshmem_putmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
  put_bytes(dest, source, nelems, pe, HOSHMEM_ROUTINE);
}
void pshmem_getmem(void *dest, const void *source, size_t nelems, int pe) {
  get_bytes(dest, source, nelems, pe, HOSHMEM_ROUTINE);
}
void pshmem_getmem_nbi(void *dest, const void *source, size_t nelems, int pe) {
  get_bytes(dest, source, nelems, pe, HOSHMEM_ROUTINE);
}

}  // extern "C"

#define ALIAS_RMA_TYPED(P, T, N)                                                                 \
  HOSHMEM_ALIAS(shmem_##N##_put);                                                                \
  HOSHMEM_ALIAS(shmem_##N##_put_nbi);                                                            \
  HOSHMEM_ALIAS(shmem_##N##_get);                                                                \
  HOSHMEM_ALIAS(shmem_##N##_get_nbi);                                                            \
  HOSHMEM_ALIAS(shmem_##N##_p);                                                                  \
  HOSHMEM_ALIAS(shmem_##N##_g);                                                                  \
  HOSHMEM_ALIAS(shmem_##N##_iput);                                                               \
  HOSHMEM_ALIAS(shmem_##N##_iget);
HOSHMEM_RMA_TYPES(ALIAS_RMA_TYPED, _)

#define ALIAS_RMA_SIZED(P, B)                                                                    \
  HOSHMEM_ALIAS(shmem_put##B);                                                                   \
  HOSHMEM_ALIAS(shmem_put##B##_nbi);                                                             \
  HOSHMEM_ALIAS(shmem_get##B);                                                                   \
  HOSHMEM_ALIAS(shmem_get##B##_nbi);                                                             \
  HOSHMEM_ALIAS(shmem_iput##B);                                                                  \
  HOSHMEM_ALIAS(shmem_iget##B);
HOSHMEM_RMA_SIZES(ALIAS_RMA_SIZED, _)

HOSHMEM_ALIAS(shmem_putmem);
HOSHMEM_ALIAS(shmem_putmem_nbi);
HOSHMEM_ALIAS(shmem_getmem);
HOSHMEM_ALIAS(shmem_getmem_nbi);
