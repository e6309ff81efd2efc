// Point-to-point synchronization: wait_until and test, the 1.6 _all/_any/_some/_vector families
// and signal_wait_until. ivar reads are atomic loads so they never tear against AMOs on the same
// word. Every wait goes through wait_until_ready (spin, yield, then sleep on the doorbell).
#include <cstdint>

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
  wait_until_ready(rt.wait, rt.control[rt.me], shm::kSleepForData,
                   [&] { return satisfied(load(p), cmp, target, routine); });
}

// --- the families: a set of ivars (status[i] != 0 excludes i; NULL status includes all), each
// compared with one value or with its own (the _vector forms).
template <class T>
struct IvarSet {
  const T *ivars;  // this PE's copy, as mapped here
  size_t n;
  const int *status;
  int cmp;
  const T *values;  // per element (vector) or one value repeated
  bool vector;
  const char *routine;

  bool included(size_t i) const { return !status || status[i] == 0; }
  bool ready(size_t i) const {
    return satisfied(load(ivars + i), cmp, vector ? values[i] : *values, routine);
  }
  bool any_included() const {
    for (size_t i = 0; i < n; ++i)
      if (included(i)) return true;
    return false;
  }
};

template <class T>
IvarSet<T> make_set(T *ivars, size_t n, const int *status, int cmp, const T *values, bool vector,
                    const char *routine) {
  // Validate the operator even for an empty set: a bad one is a bug whatever the size.
  satisfied(T{}, cmp, T{}, routine);
  const T *mapped = nullptr;
  if (n) {
    mapped = reinterpret_cast<const T *>(amo_address(ivars, n * sizeof(T), rt.me, routine));
    if (vector) check_local(values, n * sizeof(T), "cmp_values", routine);
  }
  return IvarSet<T>{mapped, n, status, cmp, values, vector, routine};
}

template <class T>
void wait_all(const IvarSet<T> &s) {
  for (size_t i = 0; i < s.n; ++i) {
    if (!s.included(i) || s.ready(i)) continue;
    wait_until_ready(rt.wait, rt.control[rt.me], shm::kSleepForData,
                     [&] { return s.ready(i); });
  }
}

template <class T>
int test_all(const IvarSet<T> &s) {
  for (size_t i = 0; i < s.n; ++i)
    if (s.included(i) && !s.ready(i)) return 0;
  return 1;  // also for an empty set (1.6 erratum)
}

// _any fairness: the scan starts just after the index returned last for the same ivars array,
// so repeated calls return every satisfied index in turn instead of always the lowest one. The
// cursor is per thread, in a small table keyed by the array's address (collisions only cost
// fairness order, never correctness).
struct AnyCursor {
  const void *ivars = nullptr;
  size_t next = 0;
};
thread_local AnyCursor any_cursors[16];

inline AnyCursor &cursor_for(const void *ivars) {
  auto &c = any_cursors[(reinterpret_cast<uintptr_t>(ivars) >> 3) % 16];
  if (c.ivars != ivars) c = AnyCursor{ivars, 0};
  return c;
}

template <class T>
size_t find_any(const IvarSet<T> &s) {
  AnyCursor &cursor = cursor_for(s.ivars);
  size_t start = cursor.next % s.n;
  for (size_t k = 0; k < s.n; ++k) {
    size_t i = start + k;
    if (i >= s.n) i -= s.n;
    if (s.included(i) && s.ready(i)) {
      cursor.next = i + 1;
      return i;
    }
  }
  return SIZE_MAX;
}

template <class T>
size_t test_any(const IvarSet<T> &s) {
  return s.n ? find_any(s) : SIZE_MAX;
}

template <class T>
size_t wait_any(const IvarSet<T> &s) {
  if (!s.any_included()) return SIZE_MAX;
  size_t found = find_any(s);
  if (found != SIZE_MAX) return found;
  wait_until_ready(rt.wait, rt.control[rt.me], shm::kSleepForData,
                   [&] { return (found = find_any(s)) != SIZE_MAX; });
  return found;
}

template <class T>
size_t test_some(const IvarSet<T> &s, size_t *indices) {
  size_t count = 0;
  for (size_t i = 0; i < s.n; ++i)
    if (s.included(i) && s.ready(i)) {
      check_local(indices, 1, "indices", s.routine);
      indices[count++] = i;
    }
  return count;
}

template <class T>
size_t wait_some(const IvarSet<T> &s, size_t *indices) {
  if (!s.any_included()) return 0;
  size_t count = test_some(s, indices);
  if (count) return count;
  wait_until_ready(rt.wait, rt.control[rt.me], shm::kSleepForData,
                   [&] { return (count = test_some(s, indices)) != 0; });
  return count;
}

}  // namespace

extern "C" {

#define DEFINE_P2P_FAMILIES(P, T, N)                                                                void pshmem_##N##_wait_until_all(T *ivars, size_t nelems, const int *status, int cmp,                                             T cmp_value) {                                                    wait_all(make_set<T>(ivars, nelems, status, cmp, &cmp_value, false, HOSHMEM_ROUTINE));         }                                                                                                size_t pshmem_##N##_wait_until_any(T *ivars, size_t nelems, const int *status, int cmp,                                             T cmp_value) {                                                  return wait_any(make_set<T>(ivars, nelems, status, cmp, &cmp_value, false, HOSHMEM_ROUTINE));   }                                                                                                size_t pshmem_##N##_wait_until_some(T *ivars, size_t nelems, size_t *indices,                                                        const int *status, int cmp, T cmp_value) {                     return wait_some(make_set<T>(ivars, nelems, status, cmp, &cmp_value, false, HOSHMEM_ROUTINE),                      indices);                                                                     }                                                                                                void pshmem_##N##_wait_until_all_vector(T *ivars, size_t nelems, const int *status, int cmp,                                             const T *cmp_values) {                                     wait_all(make_set<T>(ivars, nelems, status, cmp, cmp_values, true, HOSHMEM_ROUTINE));          }                                                                                                size_t pshmem_##N##_wait_until_any_vector(T *ivars, size_t nelems, const int *status, int cmp,                                             const T *cmp_values) {                                   return wait_any(make_set<T>(ivars, nelems, status, cmp, cmp_values, true, HOSHMEM_ROUTINE));   }                                                                                                size_t pshmem_##N##_wait_until_some_vector(T *ivars, size_t nelems, size_t *indices,                                                        const int *status, int cmp, const T *cmp_values) {      return wait_some(make_set<T>(ivars, nelems, status, cmp, cmp_values, true, HOSHMEM_ROUTINE),                      indices);                                                                     }                                                                                                int pshmem_##N##_test_all(T *ivars, size_t nelems, const int *status, int cmp, T cmp_value) {      return test_all(make_set<T>(ivars, nelems, status, cmp, &cmp_value, false, HOSHMEM_ROUTINE));   }                                                                                                size_t pshmem_##N##_test_any(T *ivars, size_t nelems, const int *status, int cmp,                                             T cmp_value) {                                                        return test_any(make_set<T>(ivars, nelems, status, cmp, &cmp_value, false, HOSHMEM_ROUTINE));   }                                                                                                size_t pshmem_##N##_test_some(T *ivars, size_t nelems, size_t *indices, const int *status,                                     int cmp, T cmp_value) {                                              return test_some(make_set<T>(ivars, nelems, status, cmp, &cmp_value, false, HOSHMEM_ROUTINE),                      indices);                                                                     }                                                                                                int pshmem_##N##_test_all_vector(T *ivars, size_t nelems, const int *status, int cmp,                                             const T *cmp_values) {                                            return test_all(make_set<T>(ivars, nelems, status, cmp, cmp_values, true, HOSHMEM_ROUTINE));    }                                                                                                size_t pshmem_##N##_test_any_vector(T *ivars, size_t nelems, const int *status, int cmp,                                             const T *cmp_values) {                                         return test_any(make_set<T>(ivars, nelems, status, cmp, cmp_values, true, HOSHMEM_ROUTINE));    }                                                                                                size_t pshmem_##N##_test_some_vector(T *ivars, size_t nelems, size_t *indices,                                                        const int *status, int cmp, const T *cmp_values) {            return test_some(make_set<T>(ivars, nelems, status, cmp, cmp_values, true, HOSHMEM_ROUTINE),                       indices);                                                                     }
HOSHMEM_P2P_TYPES(DEFINE_P2P_FAMILIES, _)
// short/ushort as SOS offers them (programs written for SOS call shmem_short_test_all & co.)
HOSHMEM_P2P_DEPRECATED_TYPES(DEFINE_P2P_FAMILIES, _)

// Returns the value that satisfied the wait (read once, so it is the value that was compared).
uint64_t pshmem_signal_wait_until(uint64_t *sig_addr, int cmp, uint64_t cmp_value) {
  const char *routine = HOSHMEM_ROUTINE;
  const uint64_t *p = local_ivar(sig_addr, routine);
  uint64_t seen = load(p);
  if (satisfied(seen, cmp, cmp_value, routine)) return seen;
  wait_until_ready(rt.wait, rt.control[rt.me], shm::kSleepForData, [&] {
    seen = load(p);
    return satisfied(seen, cmp, cmp_value, routine);
  });
  return seen;
}

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
#define ALIAS_P2P_FAMILIES(P, T, N)                \
  HOSHMEM_ALIAS(shmem_##N##_wait_until_all);        \
  HOSHMEM_ALIAS(shmem_##N##_wait_until_any);        \
  HOSHMEM_ALIAS(shmem_##N##_wait_until_some);       \
  HOSHMEM_ALIAS(shmem_##N##_wait_until_all_vector); \
  HOSHMEM_ALIAS(shmem_##N##_wait_until_any_vector); \
  HOSHMEM_ALIAS(shmem_##N##_wait_until_some_vector);\
  HOSHMEM_ALIAS(shmem_##N##_test_all);              \
  HOSHMEM_ALIAS(shmem_##N##_test_any);              \
  HOSHMEM_ALIAS(shmem_##N##_test_some);             \
  HOSHMEM_ALIAS(shmem_##N##_test_all_vector);       \
  HOSHMEM_ALIAS(shmem_##N##_test_any_vector);       \
  HOSHMEM_ALIAS(shmem_##N##_test_some_vector);
HOSHMEM_P2P_TYPES(ALIAS_P2P_FAMILIES, _)
HOSHMEM_P2P_DEPRECATED_TYPES(ALIAS_P2P_FAMILIES, _)
HOSHMEM_ALIAS(shmem_signal_wait_until);
