// Point-to-point synchronization: wait_until and test (plain forms; the _all/_any/_some/_vector
// families build on the same compare and wait). ivar reads are atomic loads so they never tear
// against AMOs on the same word.
#include "lib/api/api.h"

using namespace hoshmem;

namespace {

template <class T>
inline bool satisfied(T value, int cmp, T target, const char *routine) {
  switch (cmp) {
    case SHMEM_CMP_EQ: return value == target;
    case SHMEM_CMP_NE: return value != target;
    case SHMEM_CMP_GT: return value > target;
    case SHMEM_CMP_GE: return value >= target;
    case SHMEM_CMP_LT: return value < target;
    case SHMEM_CMP_LE: return value <= target;
  }
  fatal(routine, "invalid comparison operator %d (use one of the SHMEM_CMP_ constants)", cmp);
}

template <class T>
inline const T *local_ivar(const T *ivar, const char *routine) {
  // Must be this PE's symmetric object: a remote update can only reach those.
  return reinterpret_cast<const T *>(amo_address(ivar, sizeof(T), rt.me, routine));
}

template <class T>
inline T load(const T *ivar) {
  return __atomic_load_n(ivar, __ATOMIC_ACQUIRE);
}

template <class T>
int test(T *ivar, int cmp, T target, const char *routine) {
  const T *p = local_ivar(ivar, routine);
  return satisfied(load(p), cmp, target, routine) ? 1 : 0;
}

template <class T>
void wait_until(T *ivar, int cmp, T target, const char *routine) {
  const T *p = local_ivar(ivar, routine);
  if (satisfied(load(p), cmp, target, routine)) return;
  wait_until_ready(rt.wait, rt.control[rt.me],
                   [&] { return satisfied(load(p), cmp, target, routine); });
}

}  // namespace

extern "C" {

#define DEFINE_P2P(P, T, N)                                                                       \
  void pshmem_##N##_wait_until(T *ivar, int cmp, T cmp_value) {                                  \
    wait_until<T>(ivar, cmp, cmp_value, HOSHMEM_ROUTINE);                                        \
  }                                                                                              \
  int pshmem_##N##_test(T *ivar, int cmp, T cmp_value) {                                         \
    return test<T>(ivar, cmp, cmp_value, HOSHMEM_ROUTINE);                                       \
  }
HOSHMEM_P2P_TYPES(DEFINE_P2P, _)
HOSHMEM_P2P_DEPRECATED_TYPES(DEFINE_P2P, _)

// Deprecated: wait while *ivar == cmp_value.
#define DEFINE_WAIT_OLD(P, T, N)                                                                  \
  void pshmem_##N##_wait(T *ivar, T cmp_value) {                                                 \
    wait_until<T>(ivar, SHMEM_CMP_NE, cmp_value, HOSHMEM_ROUTINE);                               \
  }
HOSHMEM_WAIT_OLD_TYPES(DEFINE_WAIT_OLD, _)

void pshmem_wait(long *ivar, long cmp_value) {
  wait_until<long>(ivar, SHMEM_CMP_NE, cmp_value, HOSHMEM_ROUTINE);
}
void pshmem_wait_until(long *ivar, int cmp, long cmp_value) {
  wait_until<long>(ivar, cmp, cmp_value, HOSHMEM_ROUTINE);
}

}  // extern "C"

#define ALIAS_P2P(P, T, N)                                                                       \
  HOSHMEM_ALIAS(shmem_##N##_wait_until);                                                         \
  HOSHMEM_ALIAS(shmem_##N##_test);
HOSHMEM_P2P_TYPES(ALIAS_P2P, _)
HOSHMEM_P2P_DEPRECATED_TYPES(ALIAS_P2P, _)
#define ALIAS_WAIT_OLD(P, T, N) HOSHMEM_ALIAS(shmem_##N##_wait);
HOSHMEM_WAIT_OLD_TYPES(ALIAS_WAIT_OLD, _)
HOSHMEM_ALIAS(shmem_wait);
HOSHMEM_ALIAS(shmem_wait_until);
