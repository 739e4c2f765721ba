// Group commit on the writer (docs/07-sqlite.md, "Group commit"). pool::async_query's single-statement
// writes with bound parameters (INSERT, UPDATE, DELETE, REPLACE) queue for the writer; whatever queued
// while it was busy runs as one group in one job: BEGIN IMMEDIATE, each statement inside a SAVEPOINT of
// its own (a failing one is rolled back to it and fails alone), COMMIT, and only then are the group's
// statements acknowledged. One commit (one WAL append, one fsync with synchronous=FULL) for the group
// instead of one per statement, and one hop for the group instead of one per statement; an
// acknowledged write is as durable as it was in autocommit.
#pragma once

#include "queued_statement.hpp"

#include <respool/detail/request_queue.hpp>
#include <respool/sqlite/connection.hpp>

#include <boost/asio/any_completion_handler.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

namespace respool::sqlite::detail {

// One queued write: a single statement with bound parameters.
struct group_entry : queued_statement {
    group_entry(std::string q, params pr, query_handler h, respool::diagnostics* d)
        : queued_statement(std::move(q), std::move(h), d), p(std::move(pr)) {}
    params p;
    // Cancelled while queued: it completes with operation_aborted; taken into a group: it is skipped if
    // it has not run yet (a statement is never interrupted inside a group: that would undo the whole
    // transaction).
    static void on_cancel(pool_state& s, const std::shared_ptr<group_entry>& e, bool withdrawn);
};

struct group_queue {
    // No deadline of their own: they wait for the writer's acquire (whose borrow timeout fails them
    // all) and then for the group before them, however long it runs.
    respool::detail::request_queue<group_entry> pending;
    bool active = false;                           // the writer is being acquired for a group, or runs one
    static constexpr std::size_t max_group = 256;  // statements per transaction
};

// Whether pool::async_query may group `sql` (bound): its first keyword is INSERT, UPDATE, DELETE or
// REPLACE. Anything else (DDL, transaction control, PRAGMA, a CTE, a script) runs alone as before.
[[nodiscard]] bool groupable(const std::string& sql) noexcept;

// Queues `e` for the writer (starting a group when none is under way). Completes e->handler on its
// associated executor, never inside this call.
void submit_write(const std::shared_ptr<pool_state>& s, std::shared_ptr<group_entry> e);

}  // namespace respool::sqlite::detail
