// lib/base: futex wait/wake on a 32-bit word that may live in memory shared between processes
// (so never FUTEX_PRIVATE_FLAG). Used by waiters that have nothing to poll but a doorbell.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <ctime>

namespace hoshmem {

// Sleeps while *word == expected, at most timeout_ns. Spurious returns are fine for callers.
inline void futex_wait(std::atomic<uint32_t> *word, uint32_t expected, long timeout_ns) {
  timespec ts{timeout_ns / 1000000000L, timeout_ns % 1000000000L};
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

inline void futex_wake_all(std::atomic<uint32_t> *word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t *>(word), FUTEX_WAKE, INT32_MAX, nullptr, nullptr,
          0);
}

}  // namespace hoshmem
