// lib/heap: the symmetric memory of a job: this PE's heap (at the same virtual address on every PE
// when the address is free everywhere), the executable's data segment, the allocator, and the
// mappings of every same-node peer's heap and data segment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/bootstrap/bootstrap.h"
#include "lib/heap/allocator.h"
#include "lib/heap/symmetric_space.h"
#include "lib/transport/shm/control_block.h"

namespace hoshmem {

// HOSHMEM_HEAP_PAGES
enum class HeapPages { kAuto, k4K, k2M, k1G };

struct HeapConfig {
  size_t heap_size = 0;        // SHMEM_SYMMETRIC_SIZE
  HeapPages pages = HeapPages::kAuto;
  uintptr_t base_hint = 0;     // where to try to put the heap on every PE (0: anywhere)
  bool share_globals = true;   // make .data/.bss remotely accessible
  // A page-aligned range of this process that the peers must be able to write: it is moved onto
  // this PE's control file (shm::kSharedStateOffset), contents kept; peers reach it with
  // shm::shared_state
  void *shared_state = nullptr;
  size_t shared_state_bytes = 0;
};

class SymmetricMemory {
 public:
  // Collective over all PEs: creates, exchanges and maps everything. Fatal on failure.
  void setup(Bootstrap &boot, const HeapConfig &config);
  // Unmaps the heap and the peers' mappings (the data segment stays shared: globals live there).
  void teardown();

  const SymmetricSpace &space() const { return space_; }
  SymmetricAllocator &allocator() { return *allocator_; }
  shm::ControlBlock *control(int pe) const { return control_[pe]; }
  bool same_address_everywhere() const { return same_address_; }
  bool state_shared() const { return state_shared_; }  // HeapConfig::shared_state is shared
  size_t heap_size() const { return space_.heap.size; }
  void *heap_base() const { return reinterpret_cast<void *>(space_.heap.base); }
  // This PE's control area (control block, team slots) and heap as mapped here: two files, one
  // contiguous range (one registration covers both).
  char *own_file() const { return own_file_; }
  size_t file_size() const { return file_size_; }
  // The heap's page size (4096, 2 MiB or 1 GiB) and why it got it, for SHMEM_INFO.
  size_t page_size() const { return page_size_; }
  const std::string &pages_reason() const { return pages_reason_; }
  // How many PEs of this node (this one included) have a heap of hugetlb pages.
  int node_pes_huge() const { return node_pes_huge_; }
  int node_pes() const { return node_pes_; }

 private:
  // false when the range is not whole pages of at most shm::kSharedStateBytes, or the mapping
  // fails (then the range stays private)
  bool share_state(int fd, void *state, size_t bytes);
  // Creates the heap file and maps it at `at`, with the page size HeapConfig::pages asks for
  // (auto: 2 MiB pages if enough are free, else 4 KiB). Sets page_size_ and pages_reason_.
  // Returns the descriptor; fatal when an explicit request cannot be met.
  int map_heap(const HeapConfig &config, size_t heap_size, char *at);

  SymmetricSpace space_;
  std::unique_ptr<SymmetricAllocator> allocator_;
  std::vector<char *> heap_mapped_, data_mapped_;
  std::vector<shm::ControlBlock *> control_;
  struct Mapping { char *addr; size_t size; };
  std::vector<Mapping> peer_files_;  // peers' files mapped here, to unmap at teardown
  char *own_file_ = nullptr;        // control block + heap of this PE
  size_t file_size_ = 0;
  size_t page_size_ = 4096;
  std::string pages_reason_;
  int node_pes_huge_ = 0, node_pes_ = 0;
  bool same_address_ = false;
  bool state_shared_ = false;
};

}  // namespace hoshmem
