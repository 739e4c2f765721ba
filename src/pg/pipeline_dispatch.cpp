// Pipelined pool statements across carriers: see pipeline_dispatch.hpp.
#include "pipeline_dispatch.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>

#include <algorithm>
#include <chrono>

namespace asio = boost::asio;

namespace respool::pg::detail {

pipeline_dispatch::pipeline_dispatch(respool::pool<connection>& p, asio::any_io_executor ex, settings s)
    : pool_(p), ex_(std::move(ex)), s_(s), wait_timer_(ex_) {}

pipeline_dispatch::carrier* pipeline_dispatch::roomiest() noexcept {
    carrier* best = nullptr;
    for (const auto& c : carriers_)
        if (!c->pipe->broken() && c->pipe->in_flight() < s_.depth &&
            (!best || c->pipe->in_flight() < best->pipe->in_flight()))
            best = c.get();
    return best;
}

void pipeline_dispatch::waiting::on_cancel(pipeline_dispatch& d, const std::shared_ptr<waiting>& w,
                                           bool withdrawn) {
    if (withdrawn) complete(d.ex_, std::move(w->h), error_code(asio::error::operation_aborted), result{});
}

// A waiting statement leaves without running: its slot is the caller's, cleared first.
void pipeline_dispatch::fail(const std::shared_ptr<waiting>& w, error_code ec) {
    auto slot = w->h.get_cancellation_slot();
    if (slot.is_connected()) slot.clear();
    complete(ex_, std::move(w->h), ec, result{});
}

void pipeline_dispatch::submit(std::string sql, params p, query_handler h, respool::diagnostics* diag,
                               asio::any_io_executor handler_ex) {
    if (closed_) return complete(ex_, std::move(h), error_code(respool::errc::closed), result{});
    carrier* c = roomiest();
    // Another carrier when none has room, or while every one has work: spreading over connections
    // beats queueing behind another caller's statement, as long as the pool has a connection to
    // spare (the acquire says).
    if (!c || (waiting_.empty() && c->pipe->in_flight() > 0)) grow();
    if (c && waiting_.empty())
        return c->pipe->submit(std::move(sql), std::move(p), std::move(h), diag,
                               pipeline::preparation::through_cache, std::move(handler_ex));
    auto w =
        std::make_shared<waiting>(std::move(sql), std::move(p), std::move(h), diag, std::move(handler_ex));
    auto slot = w->h.get_cancellation_slot();
    if (slot.is_connected())
        slot.template emplace<respool::detail::request_canceller<waiting>>(
            respool::detail::request_canceller<waiting>{weak_from_this(), &waiting_, w});
    if (const error_code ec = waiting_.push(w, std::chrono::steady_clock::now(), s_.borrow_timeout))
        return fail(w, ec);  // max_waiters: never (the queue has no limit here)
    if (waiting_.size() == 1) arm_wait_timer();
    feed();
}

// Borrows one more connection to carry statements (one acquire at a time, up to the pool's max).
void pipeline_dispatch::grow() {
    if (growing_ || closed_ || carriers_.size() >= s_.carriers) return;
    growing_ = true;
    pool_.async_acquire(s_.borrow_timeout, [weak = weak_from_this()](error_code ec, lease<connection> l) {
        auto self = weak.lock();
        if (!self) return;  // the lease goes back as it is destroyed
        self->growing_ = false;
        if (ec || self->closed_) {
            // The pool could not lend one now. Waiting statements stay with the carriers there are;
            // with none, they fail as a borrow would have.
            if (self->carriers_.empty())
                self->fail_waiting(ec == respool::errc::timeout ? error_code(respool::errc::exhausted)
                                   : ec                         ? ec
                                                                : error_code(respool::errc::closed));
            return;
        }
        auto c = std::make_unique<carrier>();
        c->pipe = std::make_shared<pipeline>(connection_access::impl_of(*l), self->s_.statement_timeout);
        c->l = std::move(l);
        carrier* raw = c.get();
        c->pipe->on_idle = [weak, raw](bool broken) {
            if (auto s = weak.lock()) s->carrier_idle(raw, broken);
        };
        self->carriers_.push_back(std::move(c));
        self->feed();
        if (raw->pipe->in_flight() == 0 && !raw->pipe->broken()) {
            // Asked for while the other carriers were busy, it found nothing left to carry (the
            // statements went to a carrier with room meanwhile). Back to the pool now: a pipeline that
            // was never busy never reports idle, and the lease would stay out with nothing in flight.
            std::unique_ptr<carrier> spare = std::move(self->carriers_.back());  // raw: nothing waits
            self->carriers_.pop_back();
            spare->l.release();
            return;
        }
        if (!self->waiting_.empty()) self->grow();
    });
}

// Waiting statements go to carriers with room, oldest first.
void pipeline_dispatch::feed() {
    while (!waiting_.empty()) {
        carrier* c = roomiest();
        if (!c) return;
        const auto next = waiting_.pop();
        waiting& w = *next;
        auto slot = w.h.get_cancellation_slot();
        if (slot.is_connected()) slot.clear();
        c->pipe->submit(std::move(w.sql), std::move(w.p), std::move(w.h), w.diag,
                        pipeline::preparation::through_cache, std::move(w.handler_ex));
    }
    wait_timer_.cancel();
}

// A carrier's pipeline went idle (or broke): it takes waiting statements, or goes back to the pool.
void pipeline_dispatch::carrier_idle(carrier* c, bool broken) {
    const auto it =
        std::find_if(carriers_.begin(), carriers_.end(), [c](const auto& x) { return x.get() == c; });
    if (it == carriers_.end()) return;
    if (!broken) {
        feed();
        if (!(*it)->pipe->idle()) return;  // busy again
    }
    std::unique_ptr<carrier> gone = std::move(*it);
    carriers_.erase(it);
    if (broken)
        gone->l.poison();
    else
        gone->l.release();
    if (!waiting_.empty()) grow();
}

void pipeline_dispatch::arm_wait_timer() {
    const auto at = waiting_.next_deadline();
    if (!at) return;
    wait_timer_.expires_at(*at);
    wait_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
        if (auto self = weak.lock(); self && !ec) self->on_wait_timer();
    });
}

// The oldest waiting statements found no room within borrow_timeout: exhausted, as a borrow.
void pipeline_dispatch::on_wait_timer() {
    waiting_.expire(std::chrono::steady_clock::now(),
                    [this](const auto& w, error_code why) { fail(w, why); });
    arm_wait_timer();
}

void pipeline_dispatch::fail_waiting(error_code ec) {
    wait_timer_.cancel();
    waiting_.fail_all(ec, [this](const auto& w, error_code why) { fail(w, why); });
}

void pipeline_dispatch::close() {
    closed_ = true;
    fail_waiting(respool::errc::closed);
}

}  // namespace respool::pg::detail
