// Read batches: the queue on the caller's side (submit, a batch per reader lease, its shares, delivery,
// the borrow deadline of queued reads) and the batch's job on the reader's thread (run_batch). The rules
// are in read_batch.hpp and docs/07-sqlite.md.
#include "read_batch.hpp"

#include "connection_impl.hpp"
#include "pool_state.hpp"
#include "queued_delivery.hpp"
#include "statement_run.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <vector>

namespace asio = boost::asio;

namespace respool::sqlite::detail {

namespace {

using batch = std::vector<std::shared_ptr<read_entry>>;
using clock_type = std::chrono::steady_clock;

// A reader is given back to its pool at least this often while batches keep it busy, so that the
// pool's own rules (max lifetime, the leak report of acquire_ttl, a waiting with_reader) see it.
constexpr auto hold_at_most = std::chrono::milliseconds(100);

// ---- the job, on the reader's thread ----------------------------------------------------------------

// Marks `e` as the statement under way (the one a cancellation may interrupt), with no stop pending.
void set_current(connection::impl& s, const read_entry* e) noexcept {
    std::lock_guard lock(s.m);
    s.current_read = e;
    s.stop.store(0, std::memory_order_relaxed);
}

// Runs the batch's statements in turn, two or more inside one read transaction. A statement that ends
// the transaction (an interrupt, an I/O error) does not end the batch: the next one begins another.
// A broken connection stops it, and so does a statement that changed the session: what did not run
// goes back to the queue.
std::chrono::nanoseconds run_batch(connection::impl& s, const batch& b) {
    const auto start = clock_type::now();
    const bool together = b.size() > 1;
    bool open = false;  // our BEGIN is in force
    for (const auto& e : b) {
        set_current(s, e.get());
        e->ran = true;
        if (e->cancelled.load(std::memory_order_relaxed)) {
            e->ec = asio::error::operation_aborted;
            continue;
        }
        if (together && !open) open = !exec_cached(s, "BEGIN");  // else: autocommit, as alone
        static const params none;
        e->ec = run_statement(s, e->sql, e->p ? *e->p : none, e->p.has_value(), e->res);
        if (e->ec) e->words = s.last;
        if (open && ::sqlite3_get_autocommit(s.db) != 0) open = false;
        if (e->ec == condition::connection_broken) break;
        // It changed the session (a PRAGMA, an ATTACH): nobody else's statement may run in that
        // session; the rest go back to the queue, and the reader to its pool, which resets it.
        if (s.session != 0) break;
    }
    set_current(s, nullptr);
    if (open && exec_cached(s, "COMMIT")) exec_cached(s, "ROLLBACK");  // a read: its rows stand
    return clock_type::now() - start;
}

// ---- the caller's side ------------------------------------------------------------------------------

void start_batch(const std::shared_ptr<pool_state>& s);

// How many queued reads the batches on their way (waiting for a reader, or delivering and about to go
// on) will take without another reader: `together` each when statements are short, one each otherwise.
std::size_t room(const read_queue& q) noexcept {
    return q.average < read_queue::short_statement ? q.acquiring * read_queue::together : q.acquiring;
}

// Nothing queued and no batch under way: the deadline timer is cancelled, so that it does not keep the
// caller's event loop running (io_context::run returns when the work is done).
void stop_deadline_when_idle(read_queue& q) noexcept {
    if (q.timer_armed && q.batches == 0 && q.pending.empty()) q.timer->cancel();
}

// The queued reads whose borrow deadline has passed fail with errc::exhausted, as an acquire's.
void fail_expired(pool_state& s, const diagnostics& words = {}) {
    s.reads.pending.expire(clock_type::now(), deliver_failed(words));
}

// Takes this batch's share of the queue: an even split between it and the batches still waiting for
// their reader, at most max_batch; but short statements (the recent average under
// read_queue::short_statement) are taken at least `together` at a time: their cost is mostly the read
// transaction and the hop, which a batch pays once, so a few full batches in parallel beat many thin ones.
batch take_share(read_queue& q) {
    const std::size_t ways = q.acquiring + 1;
    std::size_t share = (q.pending.size() + ways - 1) / ways;
    if (q.average < read_queue::short_statement) share = std::max(share, read_queue::together);
    share = std::min({share, q.pending.size(), read_queue::max_batch});
    batch b;
    b.reserve(share);
    q.pending.take(share, b);
    return b;
}

void run_on_reader(const std::shared_ptr<pool_state>& s, lease<connection> l, clock_type::time_point since,
                   batch b);

// The batch's job ended: deliver every outcome (a statement the reader refused goes to the writer, one
// that did not run goes back to the queue), then take the next share on the same reader or give it back.
void finish_batch(const std::shared_ptr<pool_state>& s, lease<connection> l, clock_type::time_point since,
                  batch& b, std::chrono::nanoseconds took) {
    auto& q = s->reads;
    q.average = (q.average * 7 + took / static_cast<long>(b.size())) / 8;
    bool broken = false;
    for (auto& e : b)  // back in the queue, each in its arrival place with its own deadline
        if (!e->ran && !e->cancelled.load(std::memory_order_relaxed)) q.pending.requeue(e);
    ++q.acquiring;  // while delivering, the resumed callers' reads count on this batch to take them
    for (auto& e : b) {
        if (!e->ran && !e->cancelled.load(std::memory_order_relaxed)) continue;
        if (!e->ran) e->ec = asio::error::operation_aborted;
        if (e->ec == condition::connection_broken) broken = true;
        if (e->ec == error::writes_on_reader) {  // it may write: the writer, now and next time
            if (s->writes.size() >= 1024) s->writes.clear();
            s->writes.insert(e->sql);
            if (auto slot = asio::get_associated_cancellation_slot(e->handler); slot.is_connected())
                slot.clear();
            query_on_writer(s, std::move(e->sql), std::move(e->p), std::move(e->handler), e->diag);
            continue;
        }
        deliver(*e);
    }
    --q.acquiring;
    b.clear();
    if (q.closed) q.pending.fail_all(make_error_code(respool::errc::closed), deliver_failed());
    const bool others_wait = s->readers->stats().waiting > 0;
    // A reader whose session a statement changed goes back to its pool (and its reset) at once.
    if (!broken && !l->needs_reset() && !q.pending.empty() && !others_wait &&
        clock_type::now() - since < hold_at_most)
        return run_on_reader(s, std::move(l), since, take_share(q));
    if (broken)
        l.poison();
    else
        l.release();
    --q.batches;
    if (q.pending.size() > room(q)) start_batch(s);
    stop_deadline_when_idle(q);
}

void run_on_reader(const std::shared_ptr<pool_state>& s, lease<connection> l, clock_type::time_point since,
                   batch b) {
    auto& q = s->reads;
    if (b.empty()) {  // every one was cancelled while the reader was on its way
        l.release();
        --q.batches;
        stop_deadline_when_idle(q);
        return;
    }
    const auto& impl = connection_access::impl_of(*l);
    const error_code refused = claim_for_job(*impl);
    if (refused) {
        for (auto& e : b) {
            e->ec = refused;
            e->ran = true;
        }
        return finish_batch(s, std::move(l), since, b, {});
    }
    for (auto& e : b) e->runner = impl;
    auto shared = std::make_shared<batch>(std::move(b));
    const auto ex = s->writer->get_executor();
    asio::any_completion_handler<void(std::chrono::nanoseconds)> done(
        [s, l = std::move(l), since, shared](std::chrono::nanoseconds took) mutable {
            finish_batch(s, std::move(l), since, *shared, took);
        });
    offload(impl, ex, std::move(done), [shared](connection::impl& c) {
        const auto took = run_batch(c, *shared);
        c.snapshot();
        return std::make_tuple(took);
    });
}

void start_batch(const std::shared_ptr<pool_state>& s) {
    auto& q = s->reads;
    ++q.batches;
    ++q.acquiring;
    auto diag = std::make_shared<respool::diagnostics>();  // an open's failure in words
    auto& d = *diag;
    s->readers->async_acquire(s->cfg.borrow_timeout, d, [s, diag](error_code ec, lease<connection> l) {
        auto& reads = s->reads;
        --reads.acquiring;
        if (ec) {
            --reads.batches;
            // Past the borrow timeout: the reads that waited as long fail (errc::exhausted, as an
            // acquire's); the others wait on. Closed (or any other failure): every queued read fails.
            if (ec == respool::errc::timeout)
                fail_expired(*s, words_of(*diag));
            else
                reads.pending.fail_all(ec, deliver_failed(words_of(*diag)));
            if (reads.pending.size() > room(reads)) start_batch(s);
            stop_deadline_when_idle(reads);
            return;
        }
        run_on_reader(s, std::move(l), clock_type::now(), take_share(reads));
    });
}

// The borrow deadline of queued reads: one timer for the oldest, armed when none is, and re-armed for
// the next oldest when it fires (never moved when reads are taken: most are taken long before).
void arm_deadline(const std::shared_ptr<pool_state>& s) {
    auto& q = s->reads;
    const auto at = q.pending.next_deadline();
    if (q.timer_armed || !at || !q.timer) return;
    q.timer_armed = true;
    q.timer->expires_at(*at);
    q.timer->async_wait([w = std::weak_ptr<pool_state>(s)](error_code ec) {
        auto state = w.lock();
        if (!state) return;
        state->reads.timer_armed = false;
        if (ec) return;  // cancelled: idle, or the pool closed
        fail_expired(*state);
        arm_deadline(state);
    });
}

}  // namespace

void read_entry::on_cancel(pool_state& s, const std::shared_ptr<read_entry>& e, bool withdrawn) {
    if (withdrawn) return deliver_withdrawn(e, s.writer->get_executor());
    e->cancelled.store(true, std::memory_order_relaxed);
    if (auto r = e->runner.lock()) {
        std::lock_guard lock(r->m);
        if (r->current_read == e.get() && r->db) {
            r->stop.store(static_cast<int>(stop_reason::cancelled), std::memory_order_relaxed);
            ::sqlite3_interrupt(r->db);
        }
    }
}

void submit_read(const std::shared_ptr<pool_state>& s, std::shared_ptr<read_entry> e) {
    if (auto slot = asio::get_associated_cancellation_slot(e->handler); slot.is_connected())
        slot.template emplace<respool::detail::request_canceller<read_entry>>(
            respool::detail::request_canceller<read_entry>{s, &s->reads.pending, e});
    auto& q = s->reads;
    if (q.closed) {
        e->ec = make_error_code(respool::errc::closed);
        asio::post(s->writer->get_executor(), [e = std::move(e)] { deliver(*e); });
        return;
    }
    // No max_waiters here: the push always succeeds.
    if (const error_code ec = q.pending.push(e, clock_type::now(), s->cfg.borrow_timeout)) {
        e->ec = ec;
        asio::post(s->writer->get_executor(), [e = std::move(e)] { deliver(*e); });
        return;
    }
    // A new batch only for reads that no batch on its way will take.
    if (q.batches < s->cfg.readers && q.pending.size() > room(q)) start_batch(s);
    if (q.batches >= s->cfg.readers) arm_deadline(s);
}

}  // namespace respool::sqlite::detail
