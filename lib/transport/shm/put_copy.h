// lib/transport/shm: the put copy's variants (put_copy.cc), listed for tests: the library picks
// one per CPU at load time, a test runs every one this CPU can execute.
#pragma once

#include <cstddef>

namespace hoshmem::shm {

struct PutCopyVariant {
  const char *name;
  void (*copy)(char *to, const void *from, size_t bytes);
  bool runs_here;  // this CPU has the instructions it needs
};

// Every variant, widest first.
const PutCopyVariant *put_copy_variants(size_t *count);

}  // namespace hoshmem::shm
