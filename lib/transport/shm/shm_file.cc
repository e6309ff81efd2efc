#include "lib/transport/shm/shm_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "lib/base/error.h"

namespace hoshmem::shm {

int create_file(const char *label, size_t size) {
  int fd = memfd_create(label, MFD_CLOEXEC);
  if (fd < 0) fatal("shmem_init", "memfd_create(%s) failed: %s", label, strerror(errno));
  if (ftruncate(fd, static_cast<off_t>(size)) != 0)
    fatal("shmem_init", "cannot size shared memory '%s' to %zu bytes: %s", label, size,
          strerror(errno));
  return fd;
}

// linux/memfd.h's page size encoding (log2 of the size at bit 26); glibc's header lacks it and
// including the kernel's redefines glibc's MFD_ flags.
constexpr unsigned kMfdHugeShift = 26;

int create_huge_file(const char *label, size_t size, size_t page_size) {
  const unsigned huge = static_cast<unsigned>(__builtin_ctzll(page_size)) << kMfdHugeShift;
  int fd = memfd_create(label, MFD_CLOEXEC | MFD_HUGETLB | huge);
  if (fd < 0) return -1;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

void *map_file(int fd, size_t size, void *at) {
  int flags = MAP_SHARED | (at ? MAP_FIXED : 0);
  void *p = mmap(at, size, PROT_READ | PROT_WRITE, flags, fd, 0);
  if (p == MAP_FAILED)
    fatal("shmem_init", "cannot map %zu bytes of shared memory: %s", size, strerror(errno));
  return p;
}

void *attach_peer_file(pid_t pid, int fd, size_t size, void *at) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", static_cast<int>(pid), fd);
  int local = open(path, O_RDWR | O_CLOEXEC);
  if (local < 0) return nullptr;
  void *p = mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | (at ? MAP_FIXED : 0), local, 0);
  int saved = errno;
  close(local);
  errno = saved;
  return p == MAP_FAILED ? nullptr : p;
}

void *reserve_address_range(void *hint, size_t size, size_t alignment, bool *at_hint,
                            size_t aligned_offset) {
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  if (hint) {
    void *p = mmap(hint, size, PROT_NONE, flags | MAP_FIXED_NOREPLACE, -1, 0);
    if (p == hint) {
      *at_hint = true;
      return p;
    }
    if (p != MAP_FAILED) munmap(p, size);  // old kernels treat the flag as a hint
  }
  *at_hint = false;
  // Over-reserve to align, then trim both ends.
  size_t span = size + alignment;
  void *p = mmap(nullptr, span, PROT_NONE, flags, -1, 0);
  if (p == MAP_FAILED)
    fatal("shmem_init", "cannot reserve %zu bytes of address space: %s", size, strerror(errno));
  auto start = reinterpret_cast<uintptr_t>(p);
  uintptr_t aligned =
      ((start + aligned_offset + alignment - 1) & ~(uintptr_t{alignment} - 1)) - aligned_offset;
  if (aligned > start) munmap(p, aligned - start);
  uintptr_t end = start + span, used_end = aligned + size;
  if (end > used_end) munmap(reinterpret_cast<void *>(used_end), end - used_end);
  return reinterpret_cast<void *>(aligned);
}

void unmap(void *addr, size_t size) {
  if (addr && size) munmap(addr, size);
}

}  // namespace hoshmem::shm
