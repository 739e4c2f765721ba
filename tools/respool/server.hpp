// `respool serve` (docs/09-service.md): the workers, the acceptor, the ready line, the shutdown.
#pragma once

#include "serve_flags.hpp"

#include <functional>
#include <string>

namespace respool_cli {

// For a caller that runs the service inside its own process (`respool demo`).
struct serve_hooks {
    // Replaces the ready line: called on worker 0 with the bound "HOST:PORT".
    std::function<void(const std::string& host_port)> on_listening;
    // Set by run_serve once the service is set up (before on_listening): starts the graceful shutdown,
    // as SIGTERM does. Callable from any thread until run_serve returns.
    std::function<void()> stop;
};

// Runs the service until SIGINT or SIGTERM (or hooks->stop()), then shuts it down gracefully: exit
// status 0, or 1 when it cannot listen. Throws std::invalid_argument for a setting a pool refuses
// (main: exit 2).
int run_serve(const serve_config& cfg, serve_hooks* hooks = nullptr);

}  // namespace respool_cli
