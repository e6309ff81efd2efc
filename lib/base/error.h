// lib/base: the bottom layer (errors, environment parsing, futex, memory-release events).
// Depends on nothing in hoshmem.
//
// Errors are one line on stderr: "hoshmem: PE <me>: <routine>: <cause>". A fatal error then calls
// the abort hook the runtime installed (PMIx abort: the launcher tears the whole job down), so a
// bad argument never hangs the job or corrupts memory silently.
#pragma once

#include <cstdarg>

namespace hoshmem {

using AbortHook = void (*)(int status, const char *message);

// Which PE this process is (-1 before the bootstrap knows) and how to abort the job.
void set_error_identity(int my_pe);
void set_abort_hook(AbortHook hook);

// Prints the one-line message and tears the job down with exit status 1.
[[noreturn]] void fatal(const char *routine, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
// Same, with an explicit exit status.
[[noreturn]] void fatal_status(int status, const char *routine, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
// A peer stopped answering: usually it died, and the launcher, which saw it die, is already
// ending the job with the one line that names it. So this waits the grace period set by
// set_peer_lost_grace (0: none, as in a singleton job) for the launcher to end this process,
// then reports like fatal() (a network failure with every PE alive).
[[noreturn]] void fatal_peer_lost(const char *routine, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void set_peer_lost_grace(int milliseconds);
// Prints a one-line warning, continues.
void warn(const char *routine, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace hoshmem
