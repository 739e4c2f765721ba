// The inside of sqlite::connection: the handle, the statement cache, the state of the operation under
// way, and `offload`, the one way an operation runs (SQLite on the offload executor, the completion
// on the caller's).
//
// Threads. The sqlite3 handle is opened with SQLITE_OPEN_NOMUTEX: only one thread may use it at a
// time. `running` gives it to the one job on the offload executor; everything else the caller reads
// (last_error, the state for needs_reset) is written by that job before it posts the completion, so
// the caller sees it after the completion (Asio's queue orders them). The one call from another
// thread is sqlite3_interrupt (documented as safe from any thread), made under `m` while a job runs:
// the job takes `m` to end, and close takes it too, so the handle is never interrupted once closed.
#pragma once

#include <respool/sqlite/connection.hpp>
#include <respool/trace.hpp>

#include "completion_batch.hpp"
#include "offload_pool.hpp"
#include "statement_cache.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace respool::sqlite {

// Why a running statement is asked to stop (impl::stop).
enum class stop_reason : int { none = 0, cancelled = 1, deadline = 2 };

struct connection::impl {
    impl(boost::asio::any_io_executor e, boost::asio::any_io_executor o)
        : ex(std::move(e)), offload(std::move(o)) {
        if (auto* own = offload.target<detail::offload_executor>()) fast = &own->pool();
    }
    ~impl();  // closes the handle if no job did (the offload executor was torn down first)

    boost::asio::any_io_executor ex;
    boost::asio::any_io_executor offload;
    // Set when `offload` is sqlite::pool's own offload_pool: jobs go straight into its queue and
    // completions through a completion_batch (no allocation of Asio's, no wake-up per statement).
    detail::offload_pool* fast = nullptr;
    // The batch of the last completion executor (caller's side, touched only by the claimant).
    std::shared_ptr<detail::completion_batch> batch;

    std::mutex m;                        // the handle against sqlite3_interrupt; `close_after_job`
    ::sqlite3* db = nullptr;             // written by jobs only; read by the interrupter under m
    std::atomic<bool> running{false};    // a job owns the handle; released (store) after its results
    bool close_after_job = false;        // set under m by ~connection while a job runs
    std::atomic<int> stop{0};            // stop_reason, set by the canceller, read by the progress handler
    const void* current_read = nullptr;  // under m: the read batch's statement under way (read_batch.hpp)

    // Owned by the job that runs (the caller reads them only between operations).
    std::chrono::steady_clock::duration busy_timeout{};
    std::chrono::steady_clock::time_point deadline{};  // of the statement under way
    bool has_deadline = false;
    statement_cache cache;

    // Set on the caller's side before a job starts, copied by it.
    std::chrono::steady_clock::duration statement_timeout{};
    std::shared_ptr<statement_tracer> tracer;  // set_tracer: told of each statement as it ends

    // Results of the last job, for the caller.
    std::string path;
    bool reader = false;
    bool open = false;
    bool in_txn = false;
    bool busy_statements = false;
    // async_run ran or mark_dirty() was called: the next reset runs in full. Set on the caller's side
    // (atomic: mark_dirty may come while a job runs), cleared by a reset.
    std::atomic<bool> touched{false};
    diagnostics last;

    // What borrowers changed in the session (session_state.hpp). Owned by the job that runs; the
    // caller reads `session` only between operations, as the results above.
    bool preparing = false;         // inside one of our prepares: the authorizer's findings go below
    unsigned prepared_effects = 0;  // session_effect bits of the statement being prepared
    unsigned session = 0;           // session_effect bits since the last reset (or the open)
    // The per-connection pragmas as the open left them ("name", "value"), and the script that sets them
    // so again.
    std::vector<std::pair<std::string, std::string>> baseline;
    std::string restore_script;

    // Called from any thread: interrupts the job under way, if any, for `why`.
    void interrupt(stop_reason why) noexcept;
    // On the job's thread: records what the caller may read (transaction, statements, errors).
    void snapshot() noexcept;
    // On the job's thread: the handle's error as an error_code, with SQLite's message in `last`.
    error_code fail(int rc, const std::string& prefix = {});
    // Finalizes every statement and closes the handle (job thread, or the destructor).
    void close_now() noexcept;
};

// On the job's thread: installs the connection's own busy, progress and authorizer handlers (at the
// open, and again by a full reset: async_run may have replaced them).
void install_handlers(connection::impl& s) noexcept;

namespace detail {
// The inside of a connection, for the pool's own operations (group commit, read batches).
struct connection_access {
    static const std::shared_ptr<connection::impl>& impl_of(const connection& c) noexcept { return c.impl_; }
};
}  // namespace detail

// Claims the handle for one operation: false (and nothing changed) when one is under way.
inline bool claim(connection::impl& s) noexcept {
    bool expected = false;
    if (!s.running.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return false;
    s.stop.store(0, std::memory_order_relaxed);
    return true;
}

// Gives back a claim that started nothing.
inline void release_claim(connection::impl& s) noexcept {
    std::lock_guard lock(s.m);
    s.running.store(false, std::memory_order_release);
}

// Claims the handle for one of the pool's own jobs (a read batch, a commit group): an empty code, or
// why the job cannot run there (an operation is under way on it; it is closed), and then nothing is
// claimed.
inline error_code claim_for_job(connection::impl& s) noexcept {
    if (!claim(s)) return make_error_code(error::operation_in_progress);
    if (!s.open) {
        release_claim(s);
        return make_error_code(error::not_open);
    }
    return {};
}

// Cancellation of an operation: interrupts the statement under way (weak: the operation may be gone).
struct canceller {
    std::weak_ptr<connection::impl> owner;
    void operator()(boost::asio::cancellation_type t) const {
        using ct = boost::asio::cancellation_type;
        if (!(t & (ct::terminal | ct::partial | ct::total))) return;
        if (auto s = owner.lock()) s->interrupt(stop_reason::cancelled);
    }
};

// Ends a job on its thread: gives the handle back, and closes it when ~connection asked for that.
inline void end_job(connection::impl& s) noexcept {
    bool close = false;
    {
        std::lock_guard lock(s.m);
        close = s.close_after_job;
        s.running.store(false, std::memory_order_release);
    }
    if (close) s.close_now();
}

// One operation on sqlite::pool's offload_pool: the job and its completion in one allocation.
template <class Work, class... Args>
struct offload_op final : detail::offload_job, detail::completion_node {
    using handler_type = boost::asio::any_completion_handler<void(Args...)>;
    offload_op(std::shared_ptr<connection::impl> s, handler_type h, boost::asio::any_io_executor g, Work w,
               std::shared_ptr<detail::completion_batch> b)
        : self(std::move(s)),
          handler(std::move(h)),
          guard(std::move(g)),
          work(std::move(w)),
          batch(std::move(b)) {}

    void run() noexcept override {
        out.emplace(work(*self));
        end_job(*self);
        auto b = std::move(batch);  // `this` may be completed and gone once pushed
        b->push(this);
    }
    void complete() noexcept override {
        handler_type h = std::move(handler);
        std::tuple<Args...> o = std::move(*out);
        boost::asio::any_io_executor g = std::move(guard);  // the loop's work, until the handler ran
        delete this;
        // The slot is the caller's: cleared on its executor, before the handler may reuse it.
        if (auto slot = boost::asio::get_associated_cancellation_slot(h); slot.is_connected()) slot.clear();
        std::apply([&h](auto&&... a) { std::move(h)(std::move(a)...); }, std::move(o));
    }
    void discard() noexcept override { delete this; }

    std::shared_ptr<connection::impl> self;
    handler_type handler;
    boost::asio::any_io_executor guard;
    Work work;
    std::shared_ptr<detail::completion_batch> batch;
    std::optional<std::tuple<Args...>> out;
};

// Runs work(impl&) -> std::tuple<Args...> on the offload executor, then completes `h` with that tuple
// on `hex` (the handler's associated executor, found while the handler's type was still known),
// never inside this call. `running` must already be set (claim()). While the job runs, `hex` has
// outstanding work (its io_context does not run out of work under a long statement).
template <class Work, class... Args>
void offload(const std::shared_ptr<connection::impl>& self, const boost::asio::any_io_executor& hex,
             boost::asio::any_completion_handler<void(Args...)> h, Work work) {
    namespace asio = boost::asio;
    asio::any_io_executor guard = asio::prefer(hex, asio::execution::outstanding_work.tracked);
    if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected())
        slot.template emplace<canceller>(canceller{self});
    if (self->fast) {
        if (!self->batch || self->batch->executor() != hex) self->batch = self->fast->batches().get(hex);
        self->batch->expect();
        self->fast->submit(new offload_op<Work, Args...>(self, std::move(h), std::move(guard),
                                                         std::move(work), self->batch));
        return;
    }
    // Any other executor (a connection made by hand on an asio::thread_pool): a post each way.
    asio::post(self->offload,
               [self, h = std::move(h), guard = std::move(guard), work = std::move(work)]() mutable {
                   std::tuple<Args...> out = work(*self);
                   end_job(*self);
                   asio::post(guard, [h = std::move(h), out = std::move(out)]() mutable {
                       if (auto slot = asio::get_associated_cancellation_slot(h); slot.is_connected())
                           slot.clear();
                       std::apply([&h](auto&&... a) { std::move(h)(std::move(a)...); }, std::move(out));
                   });
               });
}

// Completes `h` with `values` on `hex` without running anything (a refused operation).
template <class... Args, class... Values>
void complete_now(const boost::asio::any_io_executor& hex,
                  boost::asio::any_completion_handler<void(Args...)> h, Values... values) {
    boost::asio::post(hex, [h = std::move(h), out = std::make_tuple(std::move(values)...)]() mutable {
        std::apply([&h](auto&&... a) { std::move(h)(std::move(a)...); }, std::move(out));
    });
}

}  // namespace respool::sqlite
