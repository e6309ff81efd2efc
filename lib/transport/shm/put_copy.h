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

// The name of the variant the library's puts use; *forced: HOSHMEM_PUT_COPY chose it.
const char *put_copy_in_use(bool *forced);

}  // namespace hoshmem::shm
