// The error -> HTTP mapping (the table with its reasons is in docs/08-http.md). respool's
// own codes are listed one by one: a new errc falls through to 500 until someone decides, and the table
// test names each of them. A database's codes are read through what they mean (respool::db::condition):
// respool::pg and respool::sqlite decide which conditions each of their codes matches, so this file
// knows neither database, and links neither libpq nor SQLite.
#include <respool/db_condition.hpp>
#include <respool/http/status.hpp>

namespace respool::http {
namespace {

constexpr error_mapping exhausted{503, true, "pool_exhausted", "no database connection is free; retry"};
constexpr error_mapping timed_out{503, true, "pool_timeout",
                                  "no database connection became free before the deadline; retry"};
constexpr error_mapping circuit_open{503, true, "circuit_open",
                                     "the database is failing; requests are refused for now"};
constexpr error_mapping closed{503, true, "pool_closed", "the service is shutting down"};
constexpr error_mapping cancelled{503, true, "cancelled", "the request was cancelled"};
constexpr error_mapping unavailable{503, true, "database_unavailable", "the database cannot be reached"};
constexpr error_mapping deadline{504, false, "statement_timeout", "the statement ran past its deadline"};
constexpr error_mapping database{500, false, "database_error", "the database reported an error"};
constexpr error_mapping internal{500, false, "internal_error", "internal error"};

// No default: -Wswitch names an enumerator added without a decision.
error_mapping generic(errc e) noexcept {
    switch (e) {
    case errc::closed: return closed;
    case errc::timeout: return timed_out;
    // An acquire the caller cancelled (a server stopping, a client gone): nothing was wrong with the
    // request, so it may come back.
    case errc::cancelled: return cancelled;
    case errc::unavailable: return circuit_open;
    case errc::exhausted: return exhausted;
    // A creation for this acquire failed (or ran past create_timeout): no connection could be made.
    case errc::create_failed:
    case errc::hook_timeout: return unavailable;
    // Reported to circuit strategies, never an acquire's outcome; not_supported is a programming error.
    case errc::broken:
    case errc::poisoned:
    case errc::not_supported: return internal;
    }
    return internal;
}

}  // namespace

error_mapping map_error(const error_code& ec) noexcept {
    if (!ec) return internal;  // no error to map: a caller's bug, never a success status
    if (ec.category() == category()) return generic(static_cast<errc>(ec.value()));
    // No connection can be made, the server went away or is restarting, a failover is under way; or
    // another process held an SQLite file's lock past busy_timeout: transient, like an exhausted pool.
    if (ec == db::condition::unavailable || ec == db::condition::busy) return unavailable;
    if (ec == db::condition::statement_timeout) return deadline;  // client- or server-side deadline
    if (ec == db::condition::cancelled) return cancelled;         // a statement or a wait cancelled
    // Constraint violations, serialization failures that escaped retries, SQL errors, a damaged file,
    // a full disk: no retry in a second helps. Misuse (two operations on one connection, a COPY through
    // async_query, ...) is not the database's error and falls through to internal_error.
    if (ec == db::condition::database_error) return database;
    return internal;
}

namespace {
// JSON string contents: the table's texts need none of this, a caller's own mapping might.
void append_json(std::string& out, std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            out.append("\\u00").append(1, hex[u >> 4]).append(1, hex[u & 0xf]);
        } else {
            out += c;
        }
    }
}
}  // namespace

std::string error_body(const error_mapping& m) {
    std::string out;
    out.reserve(32 + m.error.size() + m.message.size());
    out.append(R"({"error":")");
    append_json(out, m.error);
    out.append(R"(","message":")");
    append_json(out, m.message);
    out.append("\"}");
    return out;
}

}  // namespace respool::http
