#include "lib/heap/symmetric_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "lib/base/error.h"
#include "lib/heap/data_segment.h"
#include "lib/transport/shm/shm_file.h"

namespace hoshmem {
namespace {

// What a PE publishes about its memory: O(1) bytes per segment.
struct MemoryRecord {
  int32_t pid;
  int32_t heap_fd;
  int32_t data_fd;
  int32_t control_fd;
  uint32_t page_shift;  // log2 of the heap's page size: a hugetlb heap maps only at its alignment
  uint32_t pad;
  uint64_t heap_base;
  uint64_t heap_size;
  uint64_t data_size;
};

constexpr const char *kRecordKey = "hoshmem.memory";
constexpr size_t k2M = size_t{2} << 20, k1G = size_t{1} << 30;
// The heap starts and ends on a 2 MiB boundary whatever its pages (so that transparent huge
// pages can back it, and so that PEs with and without hugetlb pages agree on its size).
constexpr size_t kHeapAlignment = k2M;

const char *page_name(size_t page) {
  return page == k1G ? "1 GiB" : page == k2M ? "2 MiB" : "4 KiB";
}
const char *page_value(size_t page) { return page == k1G ? "1g" : "2m"; }

// The kernel's hugetlb pool of one page size; ok = false when the kernel has none of that size.
struct HugePool {
  bool ok = false;
  long total = 0, free = 0, reserved = 0;
  // Free and not promised to a mapping already: what a new mapping can reserve.
  long available() const { return free - reserved; }
};

long read_long(const char *dir, const char *name) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  long v = -1;
  if (fscanf(f, "%ld", &v) != 1) v = -1;
  fclose(f);
  return v;
}

HugePool huge_pool(size_t page) {
  char dir[96];
  snprintf(dir, sizeof dir, "/sys/kernel/mm/hugepages/hugepages-%zukB", page / 1024);
  HugePool p;
  p.total = read_long(dir, "nr_hugepages");
  p.free = read_long(dir, "free_hugepages");
  p.reserved = read_long(dir, "resv_hugepages");
  p.ok = p.total >= 0 && p.free >= 0 && p.reserved >= 0;
  return p;
}

// "a 1 GiB heap": heap sizes are whole MiB.
std::string heap_words(size_t heap_size) {
  char buf[48];
  if (heap_size % k1G == 0) snprintf(buf, sizeof buf, "a %zu GiB heap", heap_size / k1G);
  else snprintf(buf, sizeof buf, "a %zu MiB heap", heap_size >> 20);
  return buf;
}

// The explicit request's one line when there are too few pages.
[[noreturn]] void too_few_pages(size_t page, size_t heap_size, const HugePool &pool) {
  const long need = static_cast<long>(heap_size / page);
  const long avail = std::max(0L, pool.available());
  const long target = pool.total + need - avail;
  char how[160];
  if (page == k1G)
    snprintf(how, sizeof how,
             "echo %ld > /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages", target);
  else
    snprintf(how, sizeof how, "sysctl vm.nr_hugepages=%ld", target);
  fatal("shmem_init",
        "HOSHMEM_HEAP_PAGES=%s needs %ld free %s pages for %s, %ld are free: reserve them "
        "with '%s' as root (every PE on this machine needs its own), or set "
        "HOSHMEM_HEAP_PAGES=auto",
        page_value(page), need, page_name(page), heap_words(heap_size).c_str(), avail, how);
}

// Transparent huge pages for a shared-memory file follow shmem_enabled, not enabled: say which.
std::string thp_words() {
  std::string words = "transparent huge pages advised";
  FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/shmem_enabled", "r");
  if (!f) return words + " (no THP in this kernel)";
  char line[128] = "";
  if (!fgets(line, sizeof line, f)) line[0] = 0;
  fclose(f);
  std::string mode;
  if (const char *open = strchr(line, '['); open && strchr(open, ']'))
    mode.assign(open + 1, strchr(open, ']'));
  if (mode == "never" || mode == "deny")
    return words + ", but shmem_enabled is [" + mode + "]: 4 KiB pages";
  return words + " (shmem_enabled [" + mode + "])";
}

}  // namespace

int SymmetricMemory::map_heap(const HeapConfig &config, size_t heap_size, char *at) {
  const bool asked = config.pages == HeapPages::k2M || config.pages == HeapPages::k1G;
  const size_t page = config.pages == HeapPages::k1G ? k1G : k2M;
  std::string why_small;  // why auto (or 4k) gets 4 KiB pages
  if (config.pages == HeapPages::k4K) {
    why_small = "HOSHMEM_HEAP_PAGES=4k";
  } else if (reinterpret_cast<uintptr_t>(at) % page != 0) {
    // only a HOSHMEM_HEAP_BASE that is not a multiple of the page puts it there
    if (asked)
      fatal("shmem_init", "HOSHMEM_HEAP_PAGES=%s needs a heap address that is a multiple of "
            "%s: HOSHMEM_HEAP_BASE=%p is not", page_value(page), page_name(page), at);
    why_small = "auto: HOSHMEM_HEAP_BASE is not a multiple of 2 MiB";
  } else if (HugePool pool = huge_pool(page); !pool.ok) {
    if (asked)
      fatal("shmem_init", "HOSHMEM_HEAP_PAGES=%s: this kernel has no %s huge pages",
            page_value(page), page_name(page));
    why_small = "auto: this kernel has no 2 MiB huge pages";
  } else if (static_cast<size_t>(std::max(0L, pool.available())) < heap_size / page) {
    if (asked) too_few_pages(page, heap_size, pool);
    char buf[128];
    snprintf(buf, sizeof buf, "auto: %ld free 2 MiB huge pages, %zu needed", pool.available(),
             heap_size / page);
    why_small = buf;
  } else {
    // Mapping the file reserves its pages (MAP_SHARED on hugetlbfs): it fails rather than a later
    // fault, and it is atomic, so PEs of a node that all saw enough free pages cannot overdraw
    // them: the late ones fall back (auto) or stop (2m, 1g) here.
    int fd = shm::create_huge_file("hoshmem-heap", heap_size, page);
    if (fd >= 0 &&
        mmap(at, heap_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == at) {
      page_size_ = page;
      pages_reason_ = asked ? std::string("HOSHMEM_HEAP_PAGES=") + page_value(page)
                            : "auto: " + std::to_string(pool.available()) + " free, " +
                                  std::to_string(heap_size / page) + " needed";
      return fd;
    }
    const int err = errno;
    if (fd >= 0) close(fd);
    if (asked) {
      if (err == ENOMEM) too_few_pages(page, heap_size, huge_pool(page));
      fatal("shmem_init", "HOSHMEM_HEAP_PAGES=%s: cannot map %s of %s pages: %s",
            page_value(page), heap_words(heap_size).c_str() + 2, page_name(page), strerror(err));
    }
    why_small = std::string("auto: 2 MiB huge pages were free but could not be mapped (") +
                (err == ENOMEM ? "another process took them" : strerror(err)) + ")";
  }
  int fd = shm::create_file("hoshmem-heap", heap_size);
  shm::map_file(fd, heap_size, at);
  madvise(at, heap_size, MADV_HUGEPAGE);  // a hint: failure changes nothing
  page_size_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  pages_reason_ = why_small + "; " + thp_words();
  return fd;
}

void SymmetricMemory::setup(Bootstrap &boot, const HeapConfig &config) {
  const int me = boot.rank(), npes = boot.size();
  // 1 GiB pages need a heap of whole 1 GiB pages; every other choice rounds to 2 MiB.
  const size_t align = config.pages == HeapPages::k1G ? k1G : kHeapAlignment;
  const size_t heap_size = (config.heap_size + align - 1) & ~(align - 1);

  // This PE's memory, one address range: the control area (a file of 4 KiB pages: the fast
  // path's state is mapped from it page by page), then the heap (a file of its own, which may
  // be of huge pages, so it must start on a huge page boundary). The heap lands at base_hint if
  // that range is free.
  file_size_ = shm::kControlBytes + heap_size;
  void *hint = config.base_hint ? reinterpret_cast<void *>(config.base_hint - shm::kControlBytes)
                                : nullptr;
  bool at_hint = false;
  char *where = static_cast<char *>(
      shm::reserve_address_range(hint, file_size_, align, &at_hint, shm::kControlBytes));
  int control_fd = shm::create_file("hoshmem-control", shm::kControlBytes);
  own_file_ = static_cast<char *>(shm::map_file(control_fd, shm::kControlBytes, where));
  int heap_fd = map_heap(config, heap_size, where + shm::kControlBytes);

  DataSegment data;
  if (config.share_globals) data = share_data_segment();
  // after the globals: the state may lie in the executable's .bss, which that remaps
  state_shared_ = config.shared_state &&
                  share_state(control_fd, config.shared_state, config.shared_state_bytes);

  MemoryRecord mine{static_cast<int32_t>(getpid()), heap_fd, data.fd, control_fd,
                    static_cast<uint32_t>(__builtin_ctzll(page_size_)), 0,
                    reinterpret_cast<uint64_t>(own_file_ + shm::kControlBytes), heap_size,
                    data.size};
  boot.put(kRecordKey, &mine, sizeof mine);
  boot.exchange();

  heap_mapped_.assign(npes, nullptr);
  data_mapped_.assign(npes, nullptr);
  control_.assign(npes, nullptr);
  same_address_ = true;
  node_pes_ = node_pes_huge_ = 0;
  for (int pe : boot.node_ranks()) {
    MemoryRecord r = mine;
    if (pe != me) {
      std::vector<uint8_t> bytes = boot.get(pe, kRecordKey);
      if (bytes.size() != sizeof r) fatal("shmem_init", "PE %d sent a malformed memory record", pe);
      memcpy(&r, bytes.data(), sizeof r);
    }
    if (r.heap_size != heap_size)
      fatal("shmem_init",
            "SHMEM_SYMMETRIC_SIZE differs between PEs (%zu bytes here, %llu on PE %d, rounded to "
            "the heap's pages); set it and HOSHMEM_HEAP_PAGES the same for every PE",
            heap_size, static_cast<unsigned long long>(r.heap_size), pe);
    if (r.data_size != data.size)
      fatal("shmem_init",
            "PE %d runs a different executable (data segment %llu bytes, here %zu): "
            "all PEs must run the same program",
            pe, static_cast<unsigned long long>(r.data_size), data.size);
    ++node_pes_;
    if (r.page_shift > 12) ++node_pes_huge_;
    same_address_ = same_address_ && r.heap_base == mine.heap_base;
    char *file = own_file_;
    char *globals = reinterpret_cast<char *>(data.base);
    if (pe != me) {
      // The peer's two files side by side, its heap aligned to its page size.
      const size_t peer_page = size_t{1} << r.page_shift;
      bool anywhere;
      file = static_cast<char *>(shm::reserve_address_range(
          nullptr, file_size_, std::max(kHeapAlignment, peer_page), &anywhere, shm::kControlBytes));
      if (!shm::attach_peer_file(r.pid, r.control_fd, shm::kControlBytes, file) ||
          !shm::attach_peer_file(r.pid, r.heap_fd, heap_size, file + shm::kControlBytes))
        fatal("shmem_init", "cannot map the symmetric heap of PE %d (pid %d): %s", pe, r.pid,
              strerror(errno));
      if (peer_page < k2M) madvise(file + shm::kControlBytes, heap_size, MADV_HUGEPAGE);
      peer_files_.push_back({file, shm::kControlBytes});
      peer_files_.push_back({file + shm::kControlBytes, heap_size});
      if (data.size) {
        globals = static_cast<char *>(shm::attach_peer_file(r.pid, r.data_fd, data.size));
        if (!globals)
          fatal("shmem_init", "cannot map the global variables of PE %d (pid %d): %s", pe, r.pid,
                strerror(errno));
        peer_files_.push_back({globals, data.size});
      }
    }
    control_[pe] = reinterpret_cast<shm::ControlBlock *>(file);
    heap_mapped_[pe] = file + shm::kControlBytes;
    data_mapped_[pe] = globals;
  }
  // Every peer has opened our files once all have passed this point; the mappings keep the
  // memory alive, so the heap and control descriptors can go (the data one stays for a later
  // re-init).
  boot.barrier();
  close(heap_fd);
  close(control_fd);

  space_.heap = SegmentMap{reinterpret_cast<uintptr_t>(own_file_ + shm::kControlBytes), heap_size,
                           heap_mapped_.data()};
  space_.data = SegmentMap{data.base, data.size, data_mapped_.data()};
  allocator_ = std::make_unique<SymmetricAllocator>(space_.heap.base, heap_size);
}

bool SymmetricMemory::share_state(int fd, void *state, size_t bytes) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(state);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (at % page != 0 || bytes % page != 0 || bytes > shm::kSharedStateBytes) return false;
  memcpy(own_file_ + shm::kSharedStateOffset, state, bytes);
  return mmap(state, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
              static_cast<off_t>(shm::kSharedStateOffset)) != MAP_FAILED;
}

void SymmetricMemory::teardown() {
  for (const Mapping &m : peer_files_) shm::unmap(m.addr, m.size);
  peer_files_.clear();
  // in two parts: a hugetlb mapping is unmapped only whole pages at a time
  shm::unmap(own_file_, shm::kControlBytes);
  shm::unmap(own_file_ + shm::kControlBytes, file_size_ - shm::kControlBytes);
  own_file_ = nullptr;
  allocator_.reset();
  space_ = SymmetricSpace{};
  heap_mapped_.clear();
  data_mapped_.clear();
  control_.clear();
}

}  // namespace hoshmem
