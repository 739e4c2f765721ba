// One statement on a connection's handle, on the job's thread: what connection::async_query runs, for
// the other jobs that run statements (group commit).
#pragma once

#include "connection_impl.hpp"

#include <string>

namespace respool::sqlite::detail {

// Runs `sql` as async_query does (the statement cache, the deadline, the reader's refusal, scripts when
// not `bound`); the failure's message in s.last.
error_code run_statement(connection::impl& s, const std::string& sql, const params& p, bool bound,
                         result& out);

// Runs a statement without parameters or rows (SAVEPOINT, COMMIT, ...) through the statement cache.
error_code exec_cached(connection::impl& s, const std::string& sql);

}  // namespace respool::sqlite::detail
