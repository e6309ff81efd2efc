// lib/api: the C ABI. Each routine is defined once under its pshmem_ (profiling) name and exported
// as a weak alias shmem_ name, so profiling tools can interpose. Typed families are expanded from
// the type tables in include/shmem/shmem_types.h. This layer only unpacks arguments and calls core.
#pragma once

#include <shmem.h>
#include <shmemx.h>

#include "lib/core/runtime.h"

// The shmem_ name of the routine being defined: definitions are the pshmem_ names.
#define HOSHMEM_ROUTINE (__func__ + 1)

// Exports `name` (a shmem_ routine) as a weak alias of its pshmem_ twin.
#define HOSHMEM_ALIAS(name) \
  extern "C" __typeof__(p##name) name __attribute__((weak, alias("p" #name)))

namespace hoshmem {
struct TeamView;
// SHMEM_DEBUG, on entry to a team collective over `view`: a member that already sent this PE a
// message from an active-set collective this PE did not call with the same active set is fatal
// here (lib/api/collectives.cc) instead of both hanging. The world barrier watches for it while
// it waits (WorldBarrier::run).
void check_active_sets_matched(const TeamView &view, const char *routine);
}  // namespace hoshmem
