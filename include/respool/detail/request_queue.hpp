// The queue the database layers' statement schedulers wait in (a pipelined statement for a carrier
// connection, a read for a reader's batch, a write for the writer's commit group), as they see it: the
// sans-io core's request queue (FIFO, max_waiters, deadlines in the core's deadline index, O(1)
// cancellation, take a batch or a share, fail all on close) behind a small compiled interface. The
// core's node layout stays inside the library: request_node reserves opaque, aligned room for it (the
// library checks the size), so queueing allocates nothing beyond the entry itself.
//
// The queue has no clock and no timer: its owner arms one timer at next_deadline() and calls expire()
// when it fires. Every entry that expires fails with errc::exhausted, as an acquire past its borrow
// timeout does.
#pragma once

#include <respool/error.hpp>
#include <respool/source_location.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace respool::detail {

// The part of a queued entry the queue links. An entry type derives from it.
struct request_node {
    static constexpr std::size_t core_size = 72 + sizeof(respool::source_location);
    alignas(8) unsigned char core_part[core_size];  // the core's node (constructed by the library)
    request_node() noexcept;
    request_node(const request_node&) = delete;
    request_node& operator=(const request_node&) = delete;
    ~request_node() = default;
    // The queue's reference to the entry while it waits there (request_queue<Entry> sets and clears it).
    std::shared_ptr<request_node> queue_ref;
};

// The compiled queue of request_nodes; it owns none of them (request_queue<Entry> below does).
class request_queue_base {
public:
    using clock = std::chrono::steady_clock;
    // max_waiters: at most this many wait at once (0: no limit).
    explicit request_queue_base(std::size_t max_waiters = 0);
    ~request_queue_base();
    request_queue_base(const request_queue_base&) = delete;
    request_queue_base& operator=(const request_queue_base&) = delete;

    // false: max_waiters wait already (nothing changed).
    bool push(request_node& n, clock::time_point now, clock::duration timeout);
    bool push_unbounded(request_node& n);
    void requeue(request_node& n);
    bool cancel(request_node& n) noexcept;
    [[nodiscard]] static bool queued(const request_node& n) noexcept;
    std::size_t take(std::size_t n, std::vector<request_node*>& out);
    void expire(clock::time_point now, std::vector<request_node*>& out);
    void take_all(std::vector<request_node*>& out);
    [[nodiscard]] std::optional<clock::time_point> next_deadline() const noexcept;
    [[nodiscard]] std::size_t size() const noexcept;

private:
    struct state;
    std::unique_ptr<state> s_;
};

// A queue of shared entries (Entry derives from request_node): while an entry waits, the queue holds a
// reference to it; it gives the reference back as the entry leaves (taken, expired, failed, cancelled).
template <class Entry>
class request_queue {
public:
    using clock = request_queue_base::clock;
    using entry_ptr = std::shared_ptr<Entry>;

    explicit request_queue(std::size_t max_waiters = 0) : q_(max_waiters) {}
    // Entries still queued are let go without completing (their owner is gone).
    ~request_queue() {
        std::vector<request_node*> all;
        q_.take_all(all);
        for (request_node* n : all) n->queue_ref.reset();
    }
    request_queue(const request_queue&) = delete;
    request_queue& operator=(const request_queue&) = delete;

    // Joins the back, to give up at now + timeout. errc::exhausted when max_waiters wait already.
    error_code push(entry_ptr e, clock::time_point now, clock::duration timeout) {
        if (!q_.push(*e, now, timeout)) return make_error_code(errc::exhausted);
        hold(std::move(e));
        return {};
    }
    // Joins the back with no deadline (it waits for a condition, as long as it takes).
    error_code push_unbounded(entry_ptr e) {
        if (!q_.push_unbounded(*e)) return make_error_code(errc::exhausted);
        hold(std::move(e));
        return {};
    }
    // Back in its arrival place with its own deadline (it was taken and then not served).
    void requeue(entry_ptr e) {
        q_.requeue(*e);
        hold(std::move(e));
    }
    // Leaves the queue (O(1)): true when it was queued.
    bool cancel(Entry& e) noexcept {
        if (!q_.cancel(e)) return false;
        e.queue_ref.reset();  // the caller holds its own reference
        return true;
    }
    [[nodiscard]] static bool queued(const Entry& e) noexcept { return request_queue_base::queued(e); }

    // Up to n entries, oldest first, appended to out.
    std::size_t take(std::size_t n, std::vector<entry_ptr>& out) {
        scratch_.clear();
        const std::size_t k = q_.take(n, scratch_);
        for (request_node* r : scratch_) out.push_back(release(*r));
        return k;
    }
    // The oldest entry (it leaves the queue), or nullptr.
    entry_ptr pop() {
        scratch_.clear();
        if (q_.take(1, scratch_) == 0) return nullptr;
        return release(*scratch_.front());
    }
    // The entries whose deadline is <= now leave, in deadline order: fail(entry, errc::exhausted).
    template <class Fail>
    void expire(clock::time_point now, Fail&& fail) {
        std::vector<request_node*> due;
        q_.expire(now, due);
        const error_code ec = make_error_code(errc::exhausted);
        for (request_node* r : due) fail(release(*r), ec);
    }
    // Every entry leaves, oldest first: fail(entry, ec) (close, or what made them all fail).
    template <class Fail>
    void fail_all(error_code ec, Fail&& fail) {
        std::vector<request_node*> all;
        q_.take_all(all);
        for (request_node* r : all) fail(release(*r), ec);
    }

    // When the owner's one timer should fire: the earliest deadline of a queued entry.
    [[nodiscard]] std::optional<clock::time_point> next_deadline() const noexcept {
        return q_.next_deadline();
    }
    [[nodiscard]] std::size_t size() const noexcept { return q_.size(); }
    [[nodiscard]] bool empty() const noexcept { return q_.size() == 0; }

private:
    static void hold(entry_ptr e) noexcept {
        Entry& r = *e;
        r.queue_ref = std::move(e);
    }
    static entry_ptr release(request_node& n) noexcept {
        return std::static_pointer_cast<Entry>(std::move(n.queue_ref));
    }
    request_queue_base q_;
    std::vector<request_node*> scratch_;
};

// The cancellation slot handler of a queued entry, the same for every queue. A cancellation
// (terminal, partial or total) of an entry still queued takes it out (O(1)) and calls
// Entry::on_cancel(owner, entry, true), which completes it with operation_aborted (posted: this runs
// inside the caller's slot); of an entry no longer queued (taken), Entry::on_cancel(owner, entry,
// false), where the scheduler's own policy applies (skip it, interrupt it, or nothing). Entry names
// its queue's owner as Entry::owner_type; the owner holds `queue` and is kept alive while the handler
// runs. When the owner or the entry is gone, nothing happens.
template <class Entry>
struct request_canceller {
    std::weak_ptr<typename Entry::owner_type> owner;
    request_queue<Entry>* queue;
    std::weak_ptr<Entry> entry;

    // Type: boost::asio::cancellation_type (a template, so that this header needs no Asio).
    template <class Type>
    void operator()(Type t) const {
        if (t == Type{}) return;  // none of terminal, partial, total
        const auto o = owner.lock();
        auto e = entry.lock();
        if (!o || !e) return;
        const bool withdrawn = queue->cancel(*e);
        Entry::on_cancel(*o, e, withdrawn);
    }
};

}  // namespace respool::detail
