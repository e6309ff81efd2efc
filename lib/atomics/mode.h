// lib/atomics: the job's atomicity mode. CPU and HCA atomics are not atomic with respect to each
// other, so every PE of a job uses the same family for every AMO: all-SW (CPU atomics, with UD
// active messages to a remote PE's progress thread) or all-HW (HCA atomics, with loopback for
// same-node PEs). Chosen once at shmem_init and agreed by all PEs.
#pragma once

#include <optional>
#include <string_view>

namespace hoshmem::atomics {

enum class AtomicityMode { AllSoftware, AllHardware };

const char *mode_name(AtomicityMode mode);

struct ModeRequest {
  std::string_view requested;  // HOSHMEM_ATOMICS: "auto", "sw" or "hw"
  bool hca_present;            // an RDMA device this PE can use
};

// The mode to use, or nullopt with *why set when the request cannot be met.
std::optional<AtomicityMode> choose_mode(const ModeRequest &request, const char **why);

}  // namespace hoshmem::atomics
