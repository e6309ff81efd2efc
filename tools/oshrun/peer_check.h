// Who may connect to oshrun's PMIx server: only processes of the job's owner.
//
// libpmix 4.2 serves clients over TCP on 127.0.0.1 only, and over TCP it trusts the uid a client
// claims (a shim over getuid lets any local user claim the owner's), so a client of another user
// that knows the namespace would be accepted as a PE and could PMIx_Abort the job. Two defences:
//  1. The namespace is the job's secret (main.cc): 128 random bits, handed to the PEs only in
//     their environment, which other users cannot read. PMIx accepts only registered namespaces.
//  2. Kernel-vouched, in depth: oshrun interposes accept(), which libpmix's listener thread calls.
//     An accepted connection whose other end is a socket of another uid (the kernel's uid column
//     of /proc/net/tcp and tcp6) is closed before libpmix reads a byte of it; oshrun prints one
//     line per such uid and the job goes on. (Refusing later, from the client_connected upcall,
//     would run libpmix 4.2.2's error path after the client was attached to a rank, which
//     releases the rank's record twice; and a client that sends nothing would block the server's
//     thread in the handshake.)
#pragma once

#include <sys/types.h>

namespace oshrun {

// The uid owning the socket at the other end of `fd`, an accepted TCP connection from this
// machine (same network namespace), as the kernel shows it. False if it is not found.
bool peer_socket_uid(int fd, uid_t& uid);

}  // namespace oshrun
