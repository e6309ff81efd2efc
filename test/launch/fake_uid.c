/* LD_PRELOAD shim for the intruder test: getuid/geteuid/getgid/getegid return FAKE_UID and
 * FAKE_GID, so a PMIx client of another user claims to be the job's owner (PMIx over TCP trusts
 * the ids the client sends). */
#include <stdlib.h>
#include <sys/types.h>

static unsigned from_env(const char *name) {
  const char *v = getenv(name);
  return v ? (unsigned)strtoul(v, NULL, 10) : 0;
}

uid_t getuid(void) { return (uid_t)from_env("FAKE_UID"); }
uid_t geteuid(void) { return (uid_t)from_env("FAKE_UID"); }
gid_t getgid(void) { return (gid_t)from_env("FAKE_GID"); }
gid_t getegid(void) { return (gid_t)from_env("FAKE_GID"); }
