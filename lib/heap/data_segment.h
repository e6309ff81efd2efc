// lib/heap: making the executable's globals and statics (.data and .bss) remotely accessible.
//
// At the first shmem_init the writable part of the executable's image (after RELRO) is copied into
// a shared-memory file and that file is mapped over the same addresses (MAP_FIXED), so every global
// keeps its address and contents while becoming mappable by the other PEs of the node. Pages that
// are all zero are not copied, so a large .bss costs nothing until it is touched.
// Limits: only the executable's own globals, not those of shared libraries or thread-locals; all
// PEs must run the same executable (the segment is addressed by offset, so PIE is fine).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hoshmem {

struct DataSegment {
  uintptr_t base = 0;
  size_t size = 0;
  int fd = -1;  // the shared-memory file now backing [base, base + size)
};

// Page-aligned writable range of the executable: [end of RELRO, end of .bss).
DataSegment find_data_segment();

// Remaps the range onto a shared-memory file (once per process; later calls return the same).
// Must run while no other thread writes the executable's globals.
DataSegment share_data_segment();

}  // namespace hoshmem
