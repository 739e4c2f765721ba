// respool — the command-line tool.
//   respool demo      the service on a temporary SQLite database, driven by built-in HTTP clients
//   respool serve     the HTTP key-value service (docs/09-service.md) on SQLite or PostgreSQL
//   respool simulate  simulated resources, to explore pool sizing without a database
// Exit status 2 for a malformed flag or URL, with a message naming it.
#include "demo.hpp"
#include "serve_flags.hpp"
#include "server.hpp"
#include "simulate.hpp"

#include <respool/version.h>
#include <respool/options.hpp>
#include <respool/pg/errors.hpp>

#include <CLI/CLI.hpp>

#include <iostream>
#include <stdexcept>
#include <utility>

using namespace respool_cli;

namespace {

// What CLI11's validators cannot see alone: one flag against another.
void check_pool_flags(const std::string& db, const serve_config& cfg) {
    if (parse_db_url(db).kind == db_kind::postgresql && cfg.min_idle > cfg.max)
        throw std::invalid_argument("--min-idle (" + std::to_string(cfg.min_idle) +
                                    ") must not exceed --max (" + std::to_string(cfg.max) + ")");
}

// simulate's pool, checked here so that the message names the flags (respool::validate names the
// pool's options, min and max).
void check_simulate_flags(const simulate_config& c) {
    constexpr std::size_t limit = 0x7fffffff;  // the pool counts in 32 bits
    if (c.max == 0 || c.max > limit)
        throw std::invalid_argument("--max (" + std::to_string(c.max) + ") must be from 1 to " +
                                    std::to_string(limit));
    if (c.min > c.max)
        throw std::invalid_argument("--min (" + std::to_string(c.min) + ") must not exceed --max (" +
                                    std::to_string(c.max) + ")");
    respool::validate({.min = c.min, .max = c.max});  // the pool's own rules, should they grow
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"respool: an asynchronous resource pool for C++/Asio"};
    app.set_version_flag("--version", std::string("respool ") + RESPOOL_VERSION_STRING);
    app.require_subcommand(1);

    demo_config demo_cfg;
    auto* demo = add_demo_command(app, demo_cfg);

    serve_config serve_cfg;
    auto* serve = app.add_subcommand("serve",
                                     "an HTTP/1.1 key-value service (GET/PUT/DELETE /kv/{key}, POST "
                                     "/kv/{key}/incr, /health, /metrics) whose handlers borrow database "
                                     "connections");
    add_serve_flags(*serve, serve_cfg);

    simulate_config sim_cfg;
    auto* simulate = add_simulate_command(app, sim_cfg);

    // A first word that is no command: CLI11 would only say that a subcommand is required.
    if (argc > 1 && argv[1][0] != '-') {
        const std::string first = argv[1];
        std::string known;
        bool found = false;
        for (const CLI::App* sub :
             std::as_const(app).get_subcommands(std::function<bool(const CLI::App*)>{})) {
            found = found || sub->get_name() == first;
            known += (known.empty() ? "" : ", ") + sub->get_name();
        }
        if (!found) {
            std::cerr << "respool: unknown command '" << first << "' (" << known << ")\n\n" << app.help();
            return 2;
        }
    }

    CLI::App* current = &app;
    try {
        app.parse(argc, argv);
        if (demo->parsed()) {
            current = demo;
            check_pool_flags(demo_cfg.serve.db.empty() ? "sqlite:x" : demo_cfg.serve.db, demo_cfg.serve);
            return run_demo(demo_cfg);
        }
        if (simulate->parsed()) {
            current = simulate;
            check_simulate_flags(sim_cfg);
            return run_simulate(sim_cfg);
        }
        current = serve;
        check_pool_flags(serve_cfg.db, serve_cfg);
        check_budget_flags(serve_cfg.db, serve_cfg);
        return run_serve(serve_cfg);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {  // --version: the version alone, on stdout, status 0
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        const CLI::App* shown = serve->parsed()      ? serve
                                : demo->parsed()     ? demo
                                : simulate->parsed() ? simulate
                                                     : &app;
        // CLI11 may quote an argument (one not expected, say): it may be a connection string.
        std::cerr << "respool: " << respool::pg::masked(e.what()) << "\n\n" << shown->help();
        return 2;
    } catch (const std::invalid_argument& e) {  // a setting a pool refused (masked once more: cheap)
        std::cerr << "respool " << current->get_name() << ": " << respool::pg::masked(e.what()) << "\n";
        return 2;
    }
}
