#include "lib/atomics/mode.h"

namespace hoshmem::atomics {

const char *mode_name(AtomicityMode mode) {
  return mode == AtomicityMode::AllSoftware ? "all-sw" : "all-hw";
}

std::optional<AtomicityMode> choose_mode(const ModeRequest &request, const char **why) {
  if (request.requested == "sw") return AtomicityMode::AllSoftware;
  if (request.requested == "hw") {
    if (!request.hca_present) {
      *why = "HOSHMEM_ATOMICS=hw needs an RDMA device, and none is present";
      return std::nullopt;
    }
    return AtomicityMode::AllHardware;
  }
  if (request.requested == "auto") {
    // Hardware atomics pay off only with an HCA; without one, CPU atomics are the only choice.
    return request.hca_present ? AtomicityMode::AllHardware : AtomicityMode::AllSoftware;
  }
  *why = "HOSHMEM_ATOMICS must be auto, sw or hw";
  return std::nullopt;
}

}  // namespace hoshmem::atomics
