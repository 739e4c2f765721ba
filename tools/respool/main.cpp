// respool — the command-line tool.
//   respool serve     the HTTP key-value service of SPEC.md §6 on SQLite or PostgreSQL
//   respool simulate  simulated resources, to explore pool sizing without a database
// Exit status 2 for a malformed flag or URL, with a message naming it (SPEC.md §6).
#include "serve_flags.hpp"
#include "server.hpp"
#include "simulate.hpp"

#include <respool/version.h>
#include <respool/options.hpp>

#include <CLI/CLI.hpp>

#include <iostream>
#include <stdexcept>

using namespace respool_cli;

int main(int argc, char** argv) {
    CLI::App app{"respool: an asynchronous resource pool for C++/Asio"};
    app.set_version_flag("--version", std::string("respool ") + RESPOOL_VERSION_STRING);
    app.require_subcommand(1);

    serve_config serve_cfg;
    auto* serve = app.add_subcommand("serve",
                                     "an HTTP/1.1 key-value service whose handlers borrow database "
                                     "connections (SPEC.md §6)");
    add_serve_flags(*serve, serve_cfg);

    simulate_config sim_cfg;
    auto* simulate = add_simulate_command(app, sim_cfg);

    CLI::App* current = &app;
    try {
        app.parse(argc, argv);
        if (simulate->parsed()) {
            current = simulate;
            respool::validate({.min = sim_cfg.min, .max = sim_cfg.max});
            return run_simulate(sim_cfg);
        }
        current = serve;
        if (parse_db_url(serve_cfg.db).kind == db_kind::postgresql && serve_cfg.min_idle > serve_cfg.max)
            throw std::invalid_argument("--min-idle (" + std::to_string(serve_cfg.min_idle) +
                                        ") must not exceed --max (" + std::to_string(serve_cfg.max) + ")");
        return run_serve(serve_cfg);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {  // --version: the version alone, on stdout, status 0
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        const CLI::App* shown = serve->parsed() ? serve : simulate->parsed() ? simulate : &app;
        std::cerr << "respool: " << e.what() << "\n\n" << shown->help();
        return 2;
    } catch (const std::invalid_argument& e) {  // a setting a pool refused (messages are masked)
        std::cerr << "respool " << current->get_name() << ": " << e.what() << "\n";
        return 2;
    }
}
