// `respool serve` (SPEC.md §6): the workers, the acceptor, the ready line, the shutdown.
#pragma once

#include "serve_flags.hpp"

#include <functional>
#include <string>

namespace respool_cli {

// Runs the service until SIGINT or SIGTERM, then shuts it down gracefully: exit status 0, or 1 when it
// cannot listen. Throws std::invalid_argument for a setting a pool refuses (main: exit 2).
int run_serve(const serve_config& cfg);

}  // namespace respool_cli
