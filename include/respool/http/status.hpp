// respool::http: what an error means to an HTTP client. A request that failed with an
// error_code from respool, respool::pg or respool::sqlite gets a status, maybe `Retry-After: 1`, and a
// JSON body; docs/08-http.md has the whole table.
//
//   auto m = respool::http::map_error(ec);   // {503, true, "pool_exhausted", "..."}
//   res.result(m.status); if (m.retry_after) res.set("Retry-After", "1"); res.body() = error_body(m);
//
// (respool/http/response.hpp does this for a Beast response.)
#pragma once

#include <respool/error.hpp>

#include <string>
#include <string_view>

namespace respool::http {

struct error_mapping {
    unsigned status = 500;     // 503: come back soon; 504: a statement deadline; 500: anything else
    bool retry_after = false;  // send `Retry-After: 1` (every 503, and only those)
    std::string_view error;    // a stable name for programs, e.g. "pool_exhausted"
    std::string_view message;  // fixed text for people: never the error's own text or the database's
                               // diagnostics, so nothing of a connection string can reach a client
    bool operator==(const error_mapping&) const = default;
};

// The mapping of `ec`: the pool could not lend in time, the circuit is open, the pool is
// closed, the database cannot be reached -> 503 + Retry-After; a statement ran past its deadline -> 504;
// any other database error, and an error this table does not know (or no error at all) -> 500.
// respool::pg's and respool::sqlite's codes are read through the conditions they match
// (respool::db::condition), so this library does not bring libpq or SQLite into a program that uses
// neither.
[[nodiscard]] error_mapping map_error(const error_code& ec) noexcept;

// {"error":"<error>","message":"<message>"}
[[nodiscard]] std::string error_body(const error_mapping& m);

}  // namespace respool::http
