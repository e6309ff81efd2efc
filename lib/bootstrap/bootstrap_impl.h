// lib/bootstrap private: the concrete bootstraps make_bootstrap() chooses between.
#pragma once

#include "lib/bootstrap/bootstrap.h"

namespace hoshmem {
std::unique_ptr<Bootstrap> make_singleton_bootstrap();
std::unique_ptr<Bootstrap> make_pmix_bootstrap();
}  // namespace hoshmem
