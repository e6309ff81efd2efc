#include "lib/transport/net/peer.h"

namespace hoshmem::peer {
Routes routes;
}  // namespace hoshmem::peer
