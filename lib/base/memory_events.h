// lib/base: memory-release events. A subscriber is called whenever this process is about to
// release or replace the pages of an address range: munmap, mremap (the old range, and the target
// of MREMAP_FIXED), madvise with MADV_DONTNEED/MADV_FREE/MADV_REMOVE/MADV_DONTNEED_LOCKED, brk
// lowering the break, mmap with MAP_FIXED. That includes the calls glibc makes itself (free() of
// a large block, trimming of the heap and of thread arenas, realloc, malloc_trim), which is what a
// cache of memory registrations needs: a registration pins pages, and an address that comes back
// with other pages must not be served by it (lib/transport/rc uses this).
//
// How (x86-64 glibc): the entry of libc's munmap, mremap, madvise, mmap and brk is patched once,
// at the first subscribe(), with a jump to a function of ours that reports the range and then
// makes the system call itself (syscall(2)). Every caller goes through the patched code: the
// program, other libraries and glibc's own malloc, which calls those functions internally where
// no symbol interposer could see it. The alternative (mallopt(M_MMAP_MAX, 0) and an infinite trim
// threshold so free() never returns memory, plus interposed munmap & co. for direct calls) is not
// used: it changes the whole program's memory footprint, still misses malloc_trim() and the
// deletion of thread-arena heaps (neither looks at the trim threshold), and interposing libc's
// names from libhoshmem would clash with sanitizers and other interposers. Each patched site is
// verified first (the system-call number, the instructions overwritten, brk's store into
// __curbrk); if anything is not as expected, or the code cannot be made writable, or there is no
// glibc (static programs), nothing is subscribed and the caller is told why in one line.
//
// Callbacks run on the thread that releases the memory, before the pages go, possibly inside
// malloc with its locks held, possibly in a signal handler: they must not allocate, block, or
// release memory themselves, and must return quickly (take a lock only with try_lock, defer work
// to a later call of your own). A release made while this thread is already inside a callback
// (a signal handler, a callback breaking that rule) is not lost: it is reported right after the
// callback returns.
#pragma once

#include <cstddef>
#include <string>

namespace hoshmem::memory_events {

// `base`/`length` cover whole pages (the range is rounded out to pages).
using Callback = void (*)(void *arg, const void *base, size_t length);

// Installs the hooks if not yet done (once per process, thread-safe) and adds the callback.
// False, with one line in *why, when the hooks cannot be installed or all slots are taken.
bool subscribe(Callback callback, void *arg, std::string *why);
// Removes it; returns when no call of it is running anywhere. Not from inside a callback.
void unsubscribe(Callback callback, void *arg);

// Whether the patched code is still in place (another library may patch the same functions
// later, taking the events away from us). Cheap: compares a few bytes.
bool intact();

// How releases are caught, for SHMEM_INFO ("libc's munmap, ... patched"), or why they are not
// ("not hooked: " and the reason the installation gave).
std::string method();

}  // namespace hoshmem::memory_events
