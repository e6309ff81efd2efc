#include "lib/heap/symmetric_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
  int32_t pad;
  uint64_t heap_base;
  uint64_t heap_size;
  uint64_t data_size;
};

constexpr const char *kRecordKey = "hoshmem.memory";
constexpr size_t kHeapAlignment = 2 * 1024 * 1024;

}  // namespace

void SymmetricMemory::setup(Bootstrap &boot, const HeapConfig &config) {
  const int me = boot.rank(), npes = boot.size();
  const size_t heap_size = (config.heap_size + kHeapAlignment - 1) & ~(kHeapAlignment - 1);

  // This PE's file: control block, then the heap. The heap part lands at base_hint if free.
  file_size_ = shm::kControlBytes + heap_size;
  void *hint = config.base_hint ? reinterpret_cast<void *>(config.base_hint - shm::kControlBytes)
                                : nullptr;
  bool at_hint = false;
  void *where = shm::reserve_address_range(hint, file_size_, kHeapAlignment, &at_hint);
  int heap_fd = shm::create_file("hoshmem-heap", file_size_);
  own_file_ = static_cast<char *>(shm::map_file(heap_fd, file_size_, where));

  DataSegment data;
  if (config.share_globals) data = share_data_segment();
  // after the globals: the state may lie in the executable's .bss, which that remaps
  state_shared_ = config.shared_state &&
                  share_state(heap_fd, config.shared_state, config.shared_state_bytes);

  MemoryRecord mine{static_cast<int32_t>(getpid()), heap_fd, data.fd, 0,
                    reinterpret_cast<uint64_t>(own_file_ + shm::kControlBytes), heap_size,
                    data.size};
  boot.put(kRecordKey, &mine, sizeof mine);
  boot.exchange();

  heap_mapped_.assign(npes, nullptr);
  data_mapped_.assign(npes, nullptr);
  control_.assign(npes, nullptr);
  same_address_ = true;
  for (int pe : boot.node_ranks()) {
    MemoryRecord r = mine;
    if (pe != me) {
      std::vector<uint8_t> bytes = boot.get(pe, kRecordKey);
      if (bytes.size() != sizeof r) fatal("shmem_init", "PE %d sent a malformed memory record", pe);
      memcpy(&r, bytes.data(), sizeof r);
    }
    if (r.heap_size != heap_size)
      fatal("shmem_init",
            "SHMEM_SYMMETRIC_SIZE differs between PEs (%zu bytes here, %llu on PE %d); "
            "set it the same for every PE",
            heap_size, static_cast<unsigned long long>(r.heap_size), pe);
    if (r.data_size != data.size)
      fatal("shmem_init",
            "PE %d runs a different executable (data segment %llu bytes, here %zu): "
            "all PEs must run the same program",
            pe, static_cast<unsigned long long>(r.data_size), data.size);
    same_address_ = same_address_ && r.heap_base == mine.heap_base;
    char *file = own_file_;
    char *globals = reinterpret_cast<char *>(data.base);
    if (pe != me) {
      file = static_cast<char *>(shm::attach_peer_file(r.pid, r.heap_fd, file_size_));
      if (!file)
        fatal("shmem_init", "cannot map the symmetric heap of PE %d (pid %d): %s", pe, r.pid,
              strerror(errno));
      peer_files_.push_back({file, file_size_});
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
  // memory alive, so the heap descriptor can go (the data one stays for a later re-init).
  boot.barrier();
  close(heap_fd);

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
  shm::unmap(own_file_, file_size_);
  own_file_ = nullptr;
  allocator_.reset();
  space_ = SymmetricSpace{};
  heap_mapped_.clear();
  data_mapped_.clear();
  control_.clear();
}

}  // namespace hoshmem
