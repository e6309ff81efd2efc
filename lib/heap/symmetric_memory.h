// lib/heap: the symmetric memory of a job: this PE's heap (at the same virtual address on every PE
// when the address is free everywhere), the executable's data segment, the allocator, and the
// mappings of every same-node peer's heap and data segment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "lib/bootstrap/bootstrap.h"
#include "lib/heap/allocator.h"
#include "lib/heap/symmetric_space.h"
#include "lib/transport/shm/control_block.h"

namespace hoshmem {

struct HeapConfig {
  size_t heap_size = 0;        // SHMEM_SYMMETRIC_SIZE
  uintptr_t base_hint = 0;     // where to try to put the heap on every PE (0: anywhere)
  bool share_globals = true;   // make .data/.bss remotely accessible
  // A page-aligned range of this process that the peers must be able to write: it is moved onto
  // this PE's file (shm::kSharedStateOffset), contents kept; peers reach it with shm::shared_state
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
  // This PE's whole file as mapped here: control area (control block, team slots), then the heap.
  char *own_file() const { return own_file_; }
  size_t file_size() const { return file_size_; }

 private:
  // false when the range is not whole pages of at most shm::kSharedStateBytes, or the mapping
  // fails (then the range stays private)
  bool share_state(int fd, void *state, size_t bytes);

  SymmetricSpace space_;
  std::unique_ptr<SymmetricAllocator> allocator_;
  std::vector<char *> heap_mapped_, data_mapped_;
  std::vector<shm::ControlBlock *> control_;
  struct Mapping { char *addr; size_t size; };
  std::vector<Mapping> peer_files_;  // peers' files mapped here, to unmap at teardown
  char *own_file_ = nullptr;        // control block + heap of this PE
  size_t file_size_ = 0;
  bool same_address_ = false;
  bool state_shared_ = false;
};

}  // namespace hoshmem
