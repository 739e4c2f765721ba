// `respool demo` (the README's main job): `respool serve` on a temporary SQLite database
// (or --db postgresql://...) inside this process, driven for about 10 s by the built-in load generator,
// with a live progress line and a summary that checks every acknowledged increment is in the database.
#pragma once

#include "load_client.hpp"
#include "serve_flags.hpp"

#include <CLI/CLI.hpp>

#include <chrono>
#include <string>

namespace respool_cli {

struct demo_config {
    serve_config serve;  // --db empty: a temporary SQLite file, removed afterwards
    int clients = 32;
    std::chrono::nanoseconds duration = std::chrono::seconds(10);
    load_mix mix;  // 70:20:10
    unsigned keys = 1000;
    unsigned counters = 16;
    std::size_t value_size = 100;
    bool quiet = false;
    demo_config() { serve.db.clear(); }
};

CLI::App* add_demo_command(CLI::App& app, demo_config& cfg);
// Exit status: 0, or 1 when an acknowledged increment is missing from the database or the service
// did not start. Throws std::invalid_argument for a setting a pool refuses.
int run_demo(const demo_config& cfg);

}  // namespace respool_cli
