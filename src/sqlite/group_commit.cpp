// Group commit: the queue on the caller's side (submit, a group per writer lease, delivery) and the
// group's job on the writer's thread (run_group). The rules are in group_commit.hpp and docs/07-sqlite.md.
#include "group_commit.hpp"

#include "pool_state.hpp"
#include "queued_delivery.hpp"
#include "statement_run.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>

#include <algorithm>
#include <cctype>
#include <string_view>
#include <vector>

namespace asio = boost::asio;

namespace respool::sqlite::detail {

namespace {

using group = std::vector<std::shared_ptr<group_entry>>;

// ---- the job, on the writer's thread --------------------------------------------------------------

// Runs the group in one transaction; every entry gets its own outcome. Returns the COMMIT's error
// (then no entry is in the database, and each that had not failed already carries it).
error_code run_group(connection::impl& s, const group& g) {
    std::vector<group_entry*> todo;
    todo.reserve(g.size());
    for (const auto& e : g) todo.push_back(e.get());
    for (;;) {
        if (error_code ec = exec_cached(s, "BEGIN IMMEDIATE")) {
            for (group_entry* e : todo) {
                e->ec = ec;
                e->words = s.last;
            }
            return ec;
        }
        std::vector<group_entry*> done;  // ran and released its savepoint
        bool again = false;
        for (std::size_t i = 0; i < todo.size() && !again; ++i) {
            group_entry* e = todo[i];
            if (e->cancelled.load(std::memory_order_relaxed)) {
                e->ec = asio::error::operation_aborted;
                continue;
            }
            error_code ec = exec_cached(s, "SAVEPOINT respool_group");
            if (!ec) ec = run_statement(s, e->sql, e->p, true, e->res);
            if (!ec) ec = exec_cached(s, "RELEASE respool_group");
            if (!ec) {
                done.push_back(e);
                continue;
            }
            e->ec = ec;
            e->words = s.last;
            e->res = {};
            if (::sqlite3_get_autocommit(s.db) != 0) {
                // SQLite ended the whole transaction (an interrupt, I/O, a full disk): the statements
                // before this one were undone with it; they run again in a new one, with the rest.
                // (A deadline's stop ended with its statement, in run_statement: the others run on.)
                std::vector<group_entry*> rest(done.begin(), done.end());
                rest.insert(rest.end(), todo.begin() + static_cast<std::ptrdiff_t>(i) + 1, todo.end());
                todo = std::move(rest);
                again = true;
            } else if (exec_cached(s, "ROLLBACK TO respool_group") ||
                       exec_cached(s, "RELEASE respool_group")) {
                // The savepoint cannot be undone: nothing of this transaction may be committed.
                const error_code broken = from_result_code(SQLITE_ERROR);
                for (group_entry* d : done) d->ec = broken;
                for (std::size_t j = i + 1; j < todo.size(); ++j) todo[j]->ec = broken;
                exec_cached(s, "ROLLBACK");
                return broken;
            }
        }
        if (again) continue;
        error_code ec = exec_cached(s, "COMMIT");
        if (ec) {
            const diagnostics words = s.last;
            if (::sqlite3_get_autocommit(s.db) == 0) exec_cached(s, "ROLLBACK");
            for (group_entry* d : done) {
                d->ec = ec;
                d->words = words;
                d->res = {};
            }
        }
        return ec;
    }
}

// ---- the caller's side ------------------------------------------------------------------------------

void start_group(std::shared_ptr<pool_state> s);

// The group's job ended: give the writer back, acknowledge every entry, start the next group with
// what queued meanwhile (the resumed callers' next writes among it).
void finish_group(const std::shared_ptr<pool_state>& s, lease<connection>& l, group& g, error_code ec) {
    if (ec == condition::connection_broken)
        l.poison();
    else
        l.release();
    for (auto& e : g) deliver(*e);
    if (s->groups.pending.empty())
        s->groups.active = false;
    else
        start_group(s);
}

void run_on_writer(const std::shared_ptr<pool_state>& s, lease<connection> l, group g) {
    const auto& impl = connection_access::impl_of(*l);
    const auto ex = s->writer->get_executor();
    const error_code refused = claim_for_job(*impl);
    if (refused) {
        for (auto& e : g) e->ec = refused;
        return finish_group(s, l, g, refused);
    }
    auto shared = std::make_shared<group>(std::move(g));
    asio::any_completion_handler<void(error_code)> done(
        [s, l = std::move(l), shared](error_code ec) mutable { finish_group(s, l, *shared, ec); });
    offload(impl, ex, std::move(done), [shared](connection::impl& c) {
        error_code ec = run_group(c, *shared);
        c.snapshot();
        return std::make_tuple(ec);
    });
}

void start_group(std::shared_ptr<pool_state> s) {
    s->groups.active = true;
    auto& writer = *s->writer;
    auto diag = std::make_shared<respool::diagnostics>();  // an open's failure in words
    auto& d = *diag;
    writer.async_acquire(s->cfg.borrow_timeout, d, [s, diag](error_code ec, lease<connection> l) mutable {
        auto& q = s->groups;
        if (ec) {
            q.pending.fail_all(ec == respool::errc::timeout ? make_error_code(respool::errc::exhausted) : ec,
                               deliver_failed(words_of(*diag)));
            q.active = false;
            return;
        }
        group g;
        q.pending.take(group_queue::max_group, g);
        if (g.empty()) {  // every one was cancelled while the writer was on its way
            l.release();
            q.active = false;
            return;
        }
        run_on_writer(s, std::move(l), std::move(g));
    });
}

}  // namespace

void group_entry::on_cancel(pool_state& s, const std::shared_ptr<group_entry>& e, bool withdrawn) {
    if (withdrawn) return deliver_withdrawn(e, s.writer->get_executor());
    e->cancelled.store(true, std::memory_order_relaxed);
}

bool groupable(const std::string& sql) noexcept {
    std::size_t i = 0;
    while (i < sql.size() && std::isspace(static_cast<unsigned char>(sql[i]))) ++i;
    std::size_t j = i;
    while (j < sql.size() && std::isalpha(static_cast<unsigned char>(sql[j]))) ++j;
    std::string word(sql, i, j - i);
    for (char& c : word) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return word == "INSERT" || word == "UPDATE" || word == "DELETE" || word == "REPLACE";
}

void submit_write(const std::shared_ptr<pool_state>& s, std::shared_ptr<group_entry> e) {
    if (auto slot = asio::get_associated_cancellation_slot(e->handler); slot.is_connected())
        slot.template emplace<respool::detail::request_canceller<group_entry>>(
            respool::detail::request_canceller<group_entry>{s, &s->groups.pending, e});
    // No max_waiters here: the push always succeeds.
    if (const error_code ec = s->groups.pending.push_unbounded(e)) {
        e->ec = ec;
        asio::post(s->writer->get_executor(), [e = std::move(e)] { deliver(*e); });
        return;
    }
    if (!s->groups.active) start_group(s);
}

}  // namespace respool::sqlite::detail
