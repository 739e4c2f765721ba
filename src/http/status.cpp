// The error -> HTTP mapping (SPEC.md §6; the table with its reasons is in docs/08-http.md). Every
// enumerator of respool::errc, pg::error and sqlite::error is listed here on purpose: a new one
// falls through to 500 until someone decides, and the table test names each of them.
#include <respool/http/status.hpp>
#include <respool/pg/errors.hpp>      // the enums only: nothing of libpq is linked
#include <respool/sqlite/errors.hpp>  // nor of SQLite

#include <boost/system/errc.hpp>

#include <cstring>

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

bool named(const error_code& ec, const char* name) noexcept {
    return std::strcmp(ec.category().name(), name) == 0;
}

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

// No default in the switches below: -Wswitch names an enumerator added without a decision.
error_mapping pg_error(pg::error e) noexcept {
    switch (e) {
    case pg::error::bad_connection_string: return internal;  // configuration: no retry fixes it
    case pg::error::connect_failed:
    case pg::error::authentication_failed:  // no connection can be made (a rotated password, say)
    case pg::error::connect_timeout:
    case pg::error::connection_broken:  // the server went away under the request
    case pg::error::not_connected:      // what the next statement on that connection then says
        return unavailable;
    case pg::error::busy: return internal;  // two operations on one connection: a handler's bug
    case pg::error::statement_timeout: return deadline;
    case pg::error::unsupported_statement: return internal;  // a COPY through async_query: a handler's bug
    }
    return internal;
}

// A server error: the value is the SQLSTATE in base 36 (pg::sqlstate_error).
error_mapping pg_sqlstate(int v) noexcept {
    char s[6] = {};
    for (int i = 4; i >= 0; --i, v /= 36) {
        const int d = v % 36;
        s[i] = static_cast<char>(d < 10 ? '0' + d : 'A' + d - 10);
    }
    const std::string_view st(s, 5);
    // Class 08 (connection exception), 57P01-57P03 (shutting down, crashed, not accepting connections),
    // 53300 (too many connections), class 28 (authentication): the database cannot serve us now.
    if (st.starts_with("08") || st.starts_with("28") || st == "57P01" || st == "57P02" || st == "57P03" ||
        st == "53300")
        return unavailable;
    // 25006: a read-only transaction on a server that became a standby: a failover is under way, and
    // the pool reconnects to the new primary.
    if (st == "25006") return unavailable;
    if (st == "57014") return deadline;  // query_canceled: statement_timeout on the server
    return database;  // constraint violations, serialization failures that escaped retries, SQL errors
}

error_mapping sqlite_own(sqlite::error e) noexcept {
    switch (e) {
    case sqlite::error::statement_timeout: return deadline;
    case sqlite::error::not_open: return unavailable;  // condition::connection_broken, as pg's
    case sqlite::error::operation_in_progress:         // these four are a handler's bugs
    case sqlite::error::writes_on_reader:
    case sqlite::error::multiple_statements:
    case sqlite::error::parameter_count: return internal;
    case sqlite::error::session_not_restorable: return internal;  // the connection is replaced; not a retry
    }
    return internal;
}

// respool::sqlite's category: SQLite's result codes below 0x10000, the layer's own from 0x10001.
error_mapping sqlite_error(int v) noexcept {
    if (v >= static_cast<int>(sqlite::error::statement_timeout))
        return sqlite_own(static_cast<sqlite::error>(v));
    if (v <= 0) return internal;
    switch (v & 0xff) {  // the primary result code
    case 5:              // SQLITE_BUSY: another process held the lock past busy_timeout
    case 6:              // SQLITE_LOCKED
    case 10:             // SQLITE_IOERR: the connection is dropped and opened anew
    case 14:             // SQLITE_CANTOPEN: the file cannot be opened (now)
        return unavailable;
    case 9: return deadline;  // SQLITE_INTERRUPT: interrupted at its deadline
    default:
        return database;  // constraints, SQLITE_CORRUPT / NOTADB (no retry mends a damaged file),
                          // SQLITE_FULL, SQLITE_READONLY, SQL errors
    }
}

}  // namespace

error_mapping map_error(const error_code& ec) noexcept {
    if (!ec) return internal;  // no error to map: a caller's bug, never a success status
    if (ec.category() == category()) return generic(static_cast<errc>(ec.value()));
    if (named(ec, "respool.pg")) return pg_error(static_cast<pg::error>(ec.value()));
    if (named(ec, "respool.pg.sqlstate")) return pg_sqlstate(ec.value());
    if (named(ec, "respool.sqlite")) return sqlite_error(ec.value());
    // Asio's operation_aborted: a statement or a wait cancelled by the caller.
    if (ec == boost::system::errc::operation_canceled) return cancelled;
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
