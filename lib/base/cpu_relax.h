// lib/base: what a thread does between two looks at a word it spins on (a lock held by another
// thread, a flag a peer will set).
#pragma once

namespace hoshmem {

// A short stall that tells the core it is in a spin-wait loop. x86-64: `pause` (tens of ns on
// current cores; it also spares the sibling hyperthread and the pipeline flush when the awaited
// store arrives). aarch64: `isb`, which stops fetching until the core's earlier instructions are
// done: a stall of tens of cycles, the closest Arm has to x86's pause. Arm's `yield` hint is not
// used: cores without SMT (the Neoverse cores of Grace and BlueField, nearly all Arm cores) treat
// it as a no-op, so a spin count tuned for x86 (lib/progress/wait.h) would end far sooner.
[[gnu::always_inline]] inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("isb" ::: "memory");
#else
#error "cpu_relax.h: no spin-wait pause for this architecture (x86-64 and aarch64 have one)"
#endif
}

}  // namespace hoshmem
