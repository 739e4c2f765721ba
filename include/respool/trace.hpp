// respool: a hook that sees every statement a database connection runs, as it ends: for a
// slow-statement log, metrics per statement, or OpenTelemetry spans. Set it in the pool's settings
// (pg::pool_config::tracer, sqlite::pool_config::tracer) or on one connection (set_tracer).
//
//   struct slow_log : respool::statement_tracer {
//       void on_statement(const respool::statement_trace& t) noexcept override {
//           if (t.duration > std::chrono::milliseconds(100)) std::clog << t.sql << "\n";
//       }
//   };
//   cfg.tracer = std::make_shared<slow_log>();
//
// Without a tracer a statement costs one pointer test more; with one, a clock read at its start and its
// end and the call. docs/02-operations.md, "Tracing statements".
#pragma once

#include <respool/error.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace respool {

// One statement, as it ended. The views are valid during on_statement only.
struct statement_trace {
    std::string_view sql;                 // its text as sent (parameters are not included)
    std::size_t parameters = 0;           // bound parameters
    std::chrono::nanoseconds duration{};  // from its start to its last reply
    std::uint64_t rows = 0;               // rows returned, or rows affected by INSERT/UPDATE/DELETE
    error_code error{};                   // its failure; empty on success
    std::string_view message;             // the failure in words (the server's or the driver's, masked)
    std::string_view host;                // PostgreSQL: host:port; SQLite: the database file
    int backend_pid = 0;                  // PostgreSQL: the server process that ran it; SQLite: 0
    bool pool_statement = false;          // the pool's own: the session reset on return
};

class statement_tracer {
public:
    virtual ~statement_tracer() = default;
    // Called on the connection's executor (SQLite: its worker thread) as each statement ends, before
    // its caller resumes. It must not block; it must not throw.
    virtual void on_statement(const statement_trace& t) noexcept = 0;
};

}  // namespace respool
