// Completions of offloaded jobs going back to one caller's executor (an io_context's, usually), several
// per post: a worker that finishes a job appends its completion and posts a drain only when none is
// queued or running, and the drain runs every completion that arrived meanwhile. Without it every
// statement cost the event loop one eventfd wake-up (and the worker one write to it).
//
// The drain also waits briefly for completions still to come, when few jobs are out (at most
// `spin_while_at_most`, by default one fewer than the cores, so that the loop's spinning thread and
// the busy workers fit on the machine): the next completion of a short statement arrives within a few
// microseconds, and catching it here saves the loop its sleep and wake-up (the hop in the benchmark).
// The wait is bounded by spin_for, and a drain gives the loop back after `budget` (re-posting itself)
// so that the loop's timers and other handlers are never held up longer than that.
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace respool::sqlite::detail {

// A completion waiting for its executor: an intrusive node. Exactly one of complete() (on the
// executor, inside a drain) or discard() (the executor went away with it undelivered) is called.
struct completion_node {
    completion_node* next = nullptr;
    virtual void complete() noexcept = 0;
    virtual void discard() noexcept = 0;

protected:
    ~completion_node() = default;
};

struct batch_settings {
    std::chrono::nanoseconds spin_for = std::chrono::microseconds(25);
    std::size_t spin_while_at_most = 1;  // jobs out
    std::chrono::nanoseconds budget = std::chrono::microseconds(200);
};

class completion_batch : public std::enable_shared_from_this<completion_batch> {
public:
    completion_batch(boost::asio::any_io_executor ex, batch_settings s);
    ~completion_batch();  // discards what was never delivered
    completion_batch(const completion_batch&) = delete;
    completion_batch& operator=(const completion_batch&) = delete;

    [[nodiscard]] const boost::asio::any_io_executor& executor() const noexcept { return ex_; }
    // On the caller's side, before the job is submitted: one more completion will come here. With few
    // jobs out, a drain is queued now (behind the loop's ready handlers) so that the loop, once it has
    // nothing else to run, waits briefly for the completion instead of sleeping in the reactor.
    void expect() noexcept;
    // From a worker: the job is done; its completion runs in a drain on the executor.
    void push(completion_node* n) noexcept;

private:
    void drain() noexcept;
    void post_drain() noexcept;
    bool wait_for_more() noexcept;  // the bounded spin; true when something arrived

    const boost::asio::any_io_executor ex_;
    const batch_settings settings_;
    std::mutex m_;
    completion_node* head_ = nullptr;  // under m_
    completion_node* tail_ = nullptr;  // under m_
    bool scheduled_ = false;           // under m_: a drain is queued or running
    std::atomic<bool> ready_{false};   // head_ != nullptr, for the spin (no lock)
    std::atomic<std::size_t> outstanding_{0};
};

// The batches of one offload pool, one per caller executor (compared with ==), shared by every
// connection that completes there. Weak: a batch lives while a connection or a job holds it.
class batch_registry {
public:
    explicit batch_registry(batch_settings s) : settings_(s) {}
    std::shared_ptr<completion_batch> get(const boost::asio::any_io_executor& ex);

private:
    const batch_settings settings_;
    std::mutex m_;
    std::vector<std::weak_ptr<completion_batch>> batches_;
};

}  // namespace respool::sqlite::detail
