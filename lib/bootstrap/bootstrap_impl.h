// lib/bootstrap private: the concrete bootstraps make_bootstrap() chooses between.
#pragma once

#include <string>
#include <vector>

#include "lib/bootstrap/bootstrap.h"

namespace hoshmem {
std::unique_ptr<Bootstrap> make_singleton_bootstrap();
std::unique_ptr<Bootstrap> make_pmix_bootstrap();
std::unique_ptr<Bootstrap> make_pmi_bootstrap(int version);  // 1 or 2

// The node of each of `size` ranks from a PMI launcher's PMI_process_mapping; empty when the
// text is not "(vector,(first_node,nodes,ranks_per_node),...)".
std::vector<int> parse_process_mapping(const std::string &text, int size);
}  // namespace hoshmem
