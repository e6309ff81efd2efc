// lib/transport/shm: the intra-node transport. Memory is shared between the PEs of a node as
// anonymous shared-memory files (memfd): each PE creates its own, peers open it through
// /proc/<pid>/fd/<fd> while its owner is alive and map it. Nothing is ever named in /dev/shm, so
// nothing can leak when a job dies: the memory goes away with the last mapping.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace hoshmem::shm {

// Creates an anonymous shared-memory file of `size` bytes (sparse). Fatal on failure.
int create_file(const char *label, size_t size);

// The same backed by hugetlb pages of `page_size` (2 MiB or 1 GiB; `size` a multiple of it).
// Returns -1 (errno set) when the kernel cannot: the caller decides whether that is fatal.
// The pages are reserved when the file is first mapped, not here.
int create_huge_file(const char *label, size_t size, size_t page_size);

// Maps `size` bytes of `fd` read-write and shared, exactly at `at` (which must be an existing
// reservation of ours) or anywhere if `at` is null. Fatal on failure.
void *map_file(int fd, size_t size, void *at);

// Opens another process's shared-memory file by its pid and descriptor number and maps it
// anywhere, or exactly at `at` (a reservation of ours) if not null. Returns nullptr (and sets
// errno) if it cannot: the caller reports which peer.
void *attach_peer_file(pid_t pid, int fd, size_t size, void *at = nullptr);

// Reserves `size` bytes of address space at exactly `hint` (no mapping is replaced), or anywhere
// if that range is taken or hint is null; then the address `aligned_offset` bytes in is a
// multiple of `alignment`. Returns the address; *at_hint tells which.
void *reserve_address_range(void *hint, size_t size, size_t alignment, bool *at_hint,
                            size_t aligned_offset = 0);

void unmap(void *addr, size_t size);

}  // namespace hoshmem::shm
