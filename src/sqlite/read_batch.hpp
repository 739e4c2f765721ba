// Read batches on the readers (docs/07-sqlite.md, "Read batches"). pool::async_query's statements for a
// reader queue; a batch is started for each reader the pool may lend (up to `readers`), and when it has
// its reader it takes its share of what queued meanwhile and runs it in one job: one read transaction
// (BEGIN ... COMMIT) for two or more statements, autocommit for one. Each statement keeps its own
// result, error, deadline and cancellation. When the job ends the batch takes the next share on the same
// reader, or gives it back when nothing is queued or somebody else waits for a reader.
//
// Why: SQLite's cost of a point read is mostly the read transaction around it (the WAL read lock, two
// fcntl calls, the snapshot): eight reads in one transaction ran 3x faster than eight in autocommit on
// the 2-core machine, and two threads reading at once were no faster than one (docs/benchmarks.md). A
// batch also makes one hop to the thread pool for its statements instead of one each, and one acquire.
//
// What a caller can rely on: every statement in a batch was submitted before the batch's transaction
// began, so it sees every write acknowledged before it was submitted (read-your-writes across callers),
// and the state it sees is one that existed between its submission and its completion.
#pragma once

#include "queued_statement.hpp"

#include <respool/detail/request_queue.hpp>
#include <respool/sqlite/connection.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace respool::sqlite::detail {

// One queued read: its parameters, if any, and the reader it ran on. Its borrow deadline and place in
// the queue are the request queue's.
struct read_entry : queued_statement {
    read_entry(std::string q, std::optional<params> pr, query_handler h, respool::diagnostics* d)
        : queued_statement(std::move(q), std::move(h), d), p(std::move(pr)) {}
    std::optional<params> p;                 // none: the text alone (async_query without parameters)
    std::weak_ptr<connection::impl> runner;  // the reader it was handed to (for an interrupt)
    bool ran = false;                        // the job ran it (else it goes back to the queue)
    // Cancelled while queued: it completes with operation_aborted; taken into a batch: it is skipped if
    // it has not run yet, and interrupted if it runs.
    static void on_cancel(pool_state& s, const std::shared_ptr<read_entry>& e, bool withdrawn);
};

struct read_queue {
    respool::detail::request_queue<read_entry> pending;  // FIFO, each with its borrow deadline
    std::size_t batches = 0;                             // acquiring a reader or running (at most `readers`)
    std::size_t acquiring = 0;                           // of those, still waiting for their reader
    static constexpr std::size_t max_batch = 64;         // statements per job (a bounded transaction)
    // The recent average time of a statement in a batch, and the line under which statements are taken
    // together rather than spread over the readers (read_batch.cpp, take_share).
    std::chrono::nanoseconds average{};
    static constexpr std::chrono::nanoseconds short_statement = std::chrono::microseconds(20);
    static constexpr std::size_t together = 16;  // short statements: at least this many to a batch
    // At the queue's next borrow deadline, armed only while every reader is taken by a batch.
    std::optional<boost::asio::steady_timer> timer;
    bool timer_armed = false;
    bool closed = false;  // pool::close: what is queued fails as its batch ends (errc::closed)
};

// Queues `e` for a reader, starting a batch when fewer than `readers` are under way. Completes
// e->handler on its associated executor, never inside this call.
void submit_read(const std::shared_ptr<pool_state>& s, std::shared_ptr<read_entry> e);

}  // namespace respool::sqlite::detail
