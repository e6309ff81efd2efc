#include "lib/base/error.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace hoshmem {
namespace {
int g_my_pe = -1;
AbortHook g_abort_hook = nullptr;
int g_peer_lost_grace_ms = 0;

// Formats the whole line first and writes it with one write(2) so lines of different PEs never
// interleave mid-line.
int format_line(char *buf, size_t cap, const char *kind, const char *routine, const char *fmt,
                va_list ap) {
  int n = g_my_pe >= 0 ? snprintf(buf, cap, "hoshmem: PE %d: %s%s: ", g_my_pe, kind, routine)
                       : snprintf(buf, cap, "hoshmem: %s%s: ", kind, routine);
  if (n < 0 || static_cast<size_t>(n) >= cap) n = 0;
  int m = vsnprintf(buf + n, cap - n, fmt, ap);
  size_t len = m < 0 ? n : std::min(cap - 2, static_cast<size_t>(n + m));
  buf[len++] = '\n';
  buf[len] = '\0';
  return static_cast<int>(len);
}

[[noreturn]] void vfatal(int status, const char *routine, const char *fmt, va_list ap) {
  char line[1024];
  int len = format_line(line, sizeof line, "", routine, fmt, ap);
  fflush(stdout);
  ssize_t ignored = write(STDERR_FILENO, line, len);
  (void)ignored;
  line[len - 1] = '\0';
  if (g_abort_hook) g_abort_hook(status, line);
  _exit(status);
}
}  // namespace

void set_error_identity(int my_pe) { g_my_pe = my_pe; }
void set_abort_hook(AbortHook hook) { g_abort_hook = hook; }

void fatal(const char *routine, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfatal(1, routine, fmt, ap);
}

void set_peer_lost_grace(int milliseconds) { g_peer_lost_grace_ms = milliseconds; }

void fatal_peer_lost(const char *routine, const char *fmt, ...) {
  // Plain sleeps: the launcher's SIGTERM ends the process in the middle of one.
  for (int slept = 0; slept < g_peer_lost_grace_ms; slept += 10) usleep(10 * 1000);
  va_list ap;
  va_start(ap, fmt);
  vfatal(1, routine, fmt, ap);
}

void fatal_status(int status, const char *routine, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfatal(status, routine, fmt, ap);
}

void warn(const char *routine, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int len = format_line(line, sizeof line, "warning: ", routine, fmt, ap);
  va_end(ap);
  ssize_t ignored = write(STDERR_FILENO, line, len);
  (void)ignored;
}

}  // namespace hoshmem
