// What a sqlite::pool shares with its operations: the settings, the threads SQLite runs on, the two
// generic pools, what routing has learned, the writer's group-commit queue and the readers' batches.
#pragma once

#include <respool/sqlite/pool.hpp>

#include "group_commit.hpp"
#include "offload_pool.hpp"
#include "read_batch.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>

namespace respool::sqlite::detail {

// The threads SQLite runs on (offload_pool.hpp), joined at the end after every queued job ran (close
// jobs must run). Their last owner is never one of their own threads (jobs own connections' insides,
// not this).
struct workers {
    explicit workers(std::size_t n) : tp(settings(n)) {}
    static offload_settings settings(std::size_t n) {
        offload_settings s;
        s.threads = n;
        // The caller's loop waits for a completion only while it and the busy workers fit on the cores.
        const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
        s.batch.spin_while_at_most = cores > 1 ? cores - 1 : 1;
        return s;
    }
    offload_pool tp;
};

struct pool_state {
    pool_config cfg;
    std::shared_ptr<workers> threads;
    std::optional<respool::pool<connection>> writer;
    std::optional<respool::pool<connection>> readers;  // none with readers = 0
    // Statements a reader refused (they may write): straight to the writer next time. Bounded: cleared
    // when full (a service has a bounded set of statement texts; this only saves a reader's prepare).
    std::unordered_set<std::string> writes;
    group_queue groups;  // single-statement writes waiting for the writer (group_commit.hpp)
    read_queue reads;    // statements waiting for a reader's batch (read_batch.hpp)

    respool::pool<connection>& of(role r) { return r == role::reader && readers ? *readers : *writer; }

    // Both pools (waiters fail with closed); the queued reads fail as their batches end.
    void close() noexcept {
        if (writer) writer->close();
        if (readers) readers->close();
        reads.closed = true;
        if (reads.timer) reads.timer->cancel();
    }
};

// pool::async_query on the writer (a statement a reader refused, or every statement with no readers).
void query_on_writer(const std::shared_ptr<pool_state>& s, std::string sql, std::optional<params> p,
                     query_handler h, respool::diagnostics* diag);

}  // namespace respool::sqlite::detail
