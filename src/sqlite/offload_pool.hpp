// The threads SQLite runs on, in place of an asio::thread_pool: a job costs a lock and a pointer, not
// a futex wake, whenever a worker is awake. Measured (docs/benchmarks.md): with asio::thread_pool every
// statement woke a sleeping worker (futex) and then the sleeping event loop (eventfd), ~30 µs a hop on
// the 2-core machine for a statement SQLite runs in 3 µs.
//
// The rules, and why:
//  - One queue for every worker, popped one job at a time. A connection is not tied to a thread, and
//    readers must run in parallel: a worker that took every queued job at once would serialise them.
//    The lock is held for a push or a pop only.
//  - A worker that finds the queue empty spins (a pause instruction, bounded by spin_for) before it
//    sleeps: the next job usually comes within a microsecond or two (the caller's loop resumed a
//    coroutine that issued its next statement). At most `max_spinners` spin at once, so that idle
//    workers do not take the cores the busy ones and the event loop need.
//  - A producer wakes a sleeper only when no worker is spinning and no wake is already on its way;
//    a woken worker that leaves jobs queued behind it wakes the next one (the chain keeps the wake
//    system calls off the caller's event loop thread).
//  - Shutdown (the destructor) runs every job queued, including jobs queued by jobs, then joins:
//    close jobs must run. A job submitted after that runs on the submitting thread.
#pragma once

#include "completion_batch.hpp"

#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace respool::sqlite::detail {

// A unit of work: an intrusive node (queueing allocates nothing). run() is called exactly once, on a
// worker (or on the submitting thread once the pool has stopped); the pool does not touch the job after.
struct offload_job {
    offload_job* next = nullptr;
    virtual void run() noexcept = 0;

protected:
    ~offload_job() = default;
};

class offload_executor;

struct offload_settings {
    std::size_t threads = 1;
    std::chrono::nanoseconds spin_for = std::chrono::microseconds(25);
    std::size_t max_spinners = 1;
    batch_settings batch;  // of the completions going back to callers (completion_batch.hpp)
};

// An execution_context so that its executor can be held in an any_io_executor (sqlite::connection's
// `offload`): connections made by sqlite::pool post through it like through any executor, and take
// the allocation-free path (submit) when they find it is this one.
class offload_pool : public boost::asio::execution_context {
public:
    explicit offload_pool(offload_settings s);
    ~offload_pool();  // runs what is queued, then joins
    offload_pool(const offload_pool&) = delete;
    offload_pool& operator=(const offload_pool&) = delete;

    void submit(offload_job* job) noexcept;
    [[nodiscard]] offload_executor get_executor() noexcept;
    [[nodiscard]] std::size_t threads() const noexcept { return threads_.size(); }
    // Where the completions for `ex` gather (one batch per caller executor).
    [[nodiscard]] batch_registry& batches() noexcept { return batches_; }

private:
    void work() noexcept;
    offload_job* pop_locked() noexcept;
    bool spin() noexcept;  // true: a job may be there (the queue was seen non-empty)
    void wake_one_locked(std::unique_lock<std::mutex>& lock) noexcept;

    const offload_settings settings_;
    std::mutex m_;
    std::condition_variable cv_;
    offload_job* head_ = nullptr;
    offload_job* tail_ = nullptr;
    std::atomic<std::size_t> queued_{0};  // read by spinners without the lock
    std::atomic<std::size_t> spinners_{0};
    std::size_t sleepers_ = 0;   // under m_
    bool wake_pending_ = false;  // under m_: a notify_one whose worker has not taken the lock yet
    bool stopping_ = false;      // under m_
    std::atomic<bool> stopped_{false};
    batch_registry batches_;
    std::vector<std::thread> threads_;  // last: started when everything above is ready
};

// A job holding any callable (for execute(): posts, close jobs). One allocation.
template <class F>
struct function_job final : offload_job {
    explicit function_job(F f) : fn(std::move(f)) {}
    void run() noexcept override {
        std::unique_ptr<function_job> self(this);
        fn();
    }
    F fn;
};

// The executor: enough of Asio's executor concept for any_io_executor (never blocking; the context).
class offload_executor {
public:
    explicit offload_executor(offload_pool* p) noexcept : pool_(p) {}

    template <class F>
    void execute(F&& f) const {
        pool_->submit(new function_job<std::decay_t<F>>(std::forward<F>(f)));
    }
    [[nodiscard]] offload_pool& pool() const noexcept { return *pool_; }

    [[nodiscard]] boost::asio::execution_context& query(boost::asio::execution::context_t) const noexcept {
        return *pool_;
    }
    static constexpr boost::asio::execution::blocking_t query(boost::asio::execution::blocking_t) noexcept {
        return boost::asio::execution::blocking.never;
    }
    friend bool operator==(const offload_executor& a, const offload_executor& b) noexcept {
        return a.pool_ == b.pool_;
    }
    friend bool operator!=(const offload_executor& a, const offload_executor& b) noexcept {
        return a.pool_ != b.pool_;
    }

private:
    offload_pool* pool_;
};

inline offload_executor offload_pool::get_executor() noexcept {
    return offload_executor(this);
}

}  // namespace respool::sqlite::detail
