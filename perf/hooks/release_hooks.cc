// What the memory-release hooks (lib/base/memory_events.h) cost munmap-heavy code: the same loops
// before the hooks are installed and after, with a subscriber doing what the RC transport's does
// when its cache holds entries (try_lock, look at 16 ranges, unlock). Numbers, not a test.
//
//   c++ -std=c++20 -O2 -I. perf/hooks/release_hooks.cc lib/base/memory_events.cc -o /tmp/rh
//   /tmp/rh [ROUNDS]
//
// Each operation runs through libc and as the same raw system calls (syscall(2), which the hooks
// never see), before the hooks are installed and after: "diff" after minus diff before is what
// the hooks add (the jump, the range check, the subscriber). Best of 7 loops of ROUNDS (20000).
#include <malloc.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "lib/base/memory_events.h"

namespace {

std::mutex g_lock;
uintptr_t g_ranges[16][2];  // never overlapping anything the loops release
unsigned g_hits = 0;

void like_the_transport(void *, const void *base, size_t length) {
  if (!g_lock.try_lock()) return;
  const auto start = reinterpret_cast<uintptr_t>(base), end = start + length;
  for (auto &r : g_ranges) g_hits += r[0] < end && start < r[1];
  g_lock.unlock();
}

// The best of 7 timed loops of `rounds` calls (after one untimed) of each of two operations,
// the loops of one alternating with the other's so that load from elsewhere hits both alike.
template <class A, class B>
void best_ns(int rounds, A a, B b, double *na, double *nb) {
  *na = *nb = 1e30;
  for (int trial = 0; trial < 8; ++trial) {
    for (int which = 0; which < 2; ++which) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < rounds; ++i) which ? b() : a();
      const std::chrono::duration<double, std::nano> ns = std::chrono::steady_clock::now() - t0;
      double *best = which ? nb : na;
      if (trial) *best = std::min(*best, ns.count() / rounds);
    }
  }
}

char *map64k(bool raw) {
  return static_cast<char *>(
      raw ? reinterpret_cast<void *>(syscall(SYS_mmap, nullptr, 65536, PROT_READ | PROT_WRITE,
                                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
          : mmap(nullptr, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
}

// Each row: through libc (hooked once the hooks are in) and the same system calls made with
// syscall(2), which the hooks never see: their difference is what the hooks add.
struct Row {
  const char *name;
  double libc[2], raw[2];  // [0] before the hooks, [1] after
};

void measure(int rounds, int column, Row *rows) {
  char *area = static_cast<char *>(
      mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  int r = 0;
  Row *row = &rows[r++];
  best_ns(
      rounds,
      [] {
        char *p = map64k(false);
        p[0] = 1;
        munmap(p, 65536);
      },
      [] {
        char *p = map64k(true);
        p[0] = 1;
        syscall(SYS_munmap, p, 65536);
      },
      &row->libc[column], &row->raw[column]);
  row = &rows[r++];
  best_ns(
      rounds,
      [area] {
        area[0] = 1;
        madvise(area, 65536, MADV_DONTNEED);
      },
      [area] {
        area[0] = 1;
        syscall(SYS_madvise, area, 65536, MADV_DONTNEED);
      },
      &row->libc[column], &row->raw[column]);
  row = &rows[r++];
  best_ns(
      rounds,
      [area] {
        mmap(area, 65536, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        area[0] = 1;
      },
      [area] {
        syscall(SYS_mmap, area, 65536, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        area[0] = 1;
      },
      &row->libc[column], &row->raw[column]);
  row = &rows[r++];
  best_ns(
      rounds,
      [] {  // mapped by malloc, unmapped by free (glibc's own calls)
        auto *p = static_cast<volatile char *>(malloc(1 << 20));
        p[0] = 1;
        free(const_cast<char *>(p));
      },
      [] {
        char *p = static_cast<char *>(
            reinterpret_cast<void *>(syscall(SYS_mmap, nullptr, (1 << 20) + 4096,
                                             PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                                             -1, 0)));
        p[16] = 1;
        syscall(SYS_munmap, p, (1 << 20) + 4096);
      },
      &row->libc[column], &row->raw[column]);
  munmap(area, 1 << 20);
}

}  // namespace

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 20000;
  mallopt(M_MMAP_THRESHOLD, 128 << 10);
  Row rows[] = {{"mmap 64K + touch + munmap", {}, {}},
                {"touch + madvise(DONTNEED) 64K", {}, {}},
                {"mmap(MAP_FIXED) 64K over a mapping", {}, {}},
                {"malloc 1M + touch + free", {}, {}}};
  for (int i = 0; i < 16; ++i) g_ranges[i][0] = 4096u * (i + 1), g_ranges[i][1] = 4096u * (i + 2);
  measure(rounds, 0, rows);
  std::string why;
  if (!hoshmem::memory_events::subscribe(like_the_transport, nullptr, &why)) {
    fprintf(stderr, "cannot hook: %s\n", why.c_str());
    return 1;
  }
  measure(rounds, 1, rows);
  printf("%-36s %27s %27s\n", "ns per operation", "before the hooks", "with the hooks");
  printf("%-36s %9s %9s %7s %9s %9s %7s\n", "", "libc", "syscall", "diff", "libc", "syscall",
         "diff");
  for (const Row &row : rows) {
    printf("%-36s", row.name);
    for (int c = 0; c < 2; ++c)
      printf(" %9.0f %9.0f %+7.0f", row.libc[c], row.raw[c], row.libc[c] - row.raw[c]);
    printf("\n");
  }
  printf("(%s; the subscriber saw %u overlaps; 'syscall' for malloc+free: the same mmap and munmap)\n",
         hoshmem::memory_events::method().c_str(), g_hits);
  return 0;
}
