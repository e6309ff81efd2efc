// Symmetric memory management. Every routine is collective over the world: all PEs pass the same
// arguments, the deterministic allocator returns the same offset everywhere, and the implied
// barrier makes the new block usable by peers on return (and a freed one unused before reuse).
#include <bit>
#include <cstdint>
#include <cstring>

#include "lib/api/api.h"

using namespace hoshmem;

namespace {

void *block_address(size_t offset) { return reinterpret_cast<char *>(rt.space.heap.base) + offset; }

// Whether `ptr` is a live block of the allocator, and its offset.
bool live_block(void *ptr, size_t *offset) {
  *offset = reinterpret_cast<uintptr_t>(ptr) - rt.space.heap.base;
  return *offset < rt.space.heap.size && rt.memory.allocator().block_size(*offset) != 0;
}

#define HOSHMEM_NOT_A_BLOCK "%p was not returned by shmem_malloc/calloc/align/realloc, or was freed"

// Offset of a pointer returned by the allocator; fatal if it is not one.
size_t block_offset(void *ptr, const char *routine) {
  size_t off;
  if (!live_block(ptr, &off)) fatal(routine, HOSHMEM_NOT_A_BLOCK, ptr);
  return off;
}

void *allocate(size_t size, size_t alignment, const char *routine) {
  if (!rt.initialized) fatal(routine, "called before shmem_init");
  if (size == 0) return nullptr;  // no action and no barrier
  void *result = nullptr;
  {
    ThreadLock<std::recursive_mutex> guard(rt.setup_mutex);
    if (auto off = rt.memory.allocator().allocate(size, alignment)) result = block_address(*off);
  }
  if (!result && rt.debug)
    warn(routine, "symmetric heap exhausted: %zu bytes requested, %zu of %zu in use "
         "(raise SHMEM_SYMMETRIC_SIZE)", size, rt.memory.allocator().bytes_in_use(),
         rt.memory.allocator().capacity());
  pshmem_barrier_all();
  return result;
}

}  // namespace

extern "C" {

void *pshmem_malloc(size_t size) {
  return allocate(size, SymmetricAllocator::kGranule, HOSHMEM_ROUTINE);
}

void *pshmem_malloc_with_hints(size_t size, long hints) {
  const long known = SHMEM_MALLOC_ATOMICS_REMOTE | SHMEM_MALLOC_SIGNAL_REMOTE;
  if (rt.debug && (hints & ~known))
    warn(HOSHMEM_ROUTINE, "unknown hint bits 0x%lx ignored", hints & ~known);
  // Intra-node every block serves atomics and signals equally well: hints change nothing yet.
  return allocate(size, SymmetricAllocator::kGranule, HOSHMEM_ROUTINE);
}

void *pshmem_align(size_t alignment, size_t size) {
  // The spec leaves an alignment that is not a power of two undefined. Programs written for SOS
  // (dlmalloc's memalign) get it rounded up to the next power of two, which also meets every
  // smaller power of two the caller may have meant; so do we, saying so under SHMEM_DEBUG.
  // 0 means no particular alignment, as memalign takes it.
  size_t rounded = alignment;
  if (alignment & (alignment - 1)) {
    rounded = alignment > (SIZE_MAX >> 1) + 1 ? 0 : std::bit_ceil(alignment);
    if (rounded == 0) {  // no power of two that large: nothing can be allocated
      if (rt.debug) warn(HOSHMEM_ROUTINE, "alignment %zu is larger than any block", alignment);
      if (size) pshmem_barrier_all();  // collective like any other failed allocation
      return nullptr;
    }
    if (rt.debug)
      warn(HOSHMEM_ROUTINE, "alignment %zu is not a power of two: rounded up to %zu", alignment,
           rounded);
  }
  // The spec asks for a multiple of sizeof(void *), but programs written for SOS and OSHMEM pass
  // 1, 2 or 4 too (SOS's own shmemalign test starts at 2): every block meets those already.
  return allocate(size, rounded < sizeof(void *) ? sizeof(void *) : rounded, HOSHMEM_ROUTINE);
}

void *pshmem_calloc(size_t count, size_t size) {
  size_t bytes;
  if (count == 0 || size == 0) return nullptr;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    pshmem_barrier_all();  // as for any other failed allocation
    return nullptr;
  }
  if (!rt.initialized) fatal(HOSHMEM_ROUTINE, "called before shmem_init");
  void *result = nullptr;
  {
    ThreadLock<std::recursive_mutex> guard(rt.setup_mutex);
    if (auto off = rt.memory.allocator().allocate(bytes, SymmetricAllocator::kGranule)) {
      result = block_address(*off);
      memset(result, 0, bytes);  // zeroed before the barrier, so no peer sees old contents
    }
  }
  pshmem_barrier_all();
  return result;
}

void pshmem_free(void *ptr) {
  if (!ptr) return;
  size_t off = block_offset(ptr, HOSHMEM_ROUTINE);
  pshmem_barrier_all();  // nobody may still be writing the block
  ThreadLock<std::recursive_mutex> guard(rt.setup_mutex);
  rt.memory.allocator().free(off);
}

// A pointer that is not a live block (freed already, say) is reported and NULL returned, the heap
// untouched, as other implementations do: programs that probe this go on to their next check.
// The barriers still happen, so PEs that disagree about the pointer do not hang each other.
void *pshmem_realloc(void *ptr, size_t size) {
  if (!ptr) return pshmem_malloc(size);
  size_t off;
  if (!live_block(ptr, &off)) [[unlikely]] {
    warn(HOSHMEM_ROUTINE, HOSHMEM_NOT_A_BLOCK ": returning NULL, the heap is unchanged", ptr);
    pshmem_barrier_all();
    if (size != 0) pshmem_barrier_all();  // as many barriers as a valid call makes
    return nullptr;
  }
  if (size == 0) {
    pshmem_free(ptr);
    return nullptr;
  }
  pshmem_barrier_all();  // no peer still writes the old block while we copy it
  void *result = ptr;
  {
    ThreadLock<std::recursive_mutex> guard(rt.setup_mutex);
    SymmetricAllocator &heap = rt.memory.allocator();
    const size_t old_size = heap.block_size(off);
    if (size > old_size) {
      auto moved = heap.allocate(size, SymmetricAllocator::kGranule);
      if (moved) {
        result = block_address(*moved);
        memcpy(result, ptr, old_size);
        heap.free(off);
      } else {
        result = nullptr;  // the old block stays as it was
      }
    }
  }
  pshmem_barrier_all();
  return result;
}

// Deprecated (1.2) names.
void *pshmalloc(size_t size) { return pshmem_malloc(size); }
void pshfree(void *ptr) { pshmem_free(ptr); }
void *pshrealloc(void *ptr, size_t size) { return pshmem_realloc(ptr, size); }
void *pshmemalign(size_t alignment, size_t size) { return pshmem_align(alignment, size); }

}  // extern "C"

HOSHMEM_ALIAS(shmem_malloc);
HOSHMEM_ALIAS(shmem_malloc_with_hints);
HOSHMEM_ALIAS(shmem_align);
HOSHMEM_ALIAS(shmem_calloc);
HOSHMEM_ALIAS(shmem_free);
HOSHMEM_ALIAS(shmem_realloc);
HOSHMEM_ALIAS(shmalloc);
HOSHMEM_ALIAS(shfree);
HOSHMEM_ALIAS(shrealloc);
HOSHMEM_ALIAS(shmemalign);
