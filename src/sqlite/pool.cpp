// respool::sqlite::pool: two respool::pool<sqlite::connection> (the writer, max 1; the readers), the
// thread pool SQLite runs on, the hooks, and the routing of async_query. Which hook does what
// (docs/07-sqlite.md):
//   factory         open on the thread pool (pragmas; readers query_only), statement timeout set
//   before_acquire  is_open(): a connection closed under its holder is not lent again
//   needs_reset     synchronous, no SQLite call: a transaction or statement left open, the session
//                   changed (a PRAGMA set, ATTACH, a TEMP object), async_run or mark_dirty used
//   before_release  async_reset (reset busy statements, ROLLBACK, restore the session when changed),
//                   bounded by reset_timeout; a connection that cannot be reset is destroyed
#include <respool/sqlite/pool.hpp>

#include "group_commit.hpp"
#include "pool_state.hpp"

#include <respool/detail/db_acquire.hpp>
#include <respool/detail/db_failure.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/this_coro.hpp>

#include <stdexcept>

namespace asio = boost::asio;

namespace respool::sqlite {

namespace {

using detail::pool_state;
using detail::role;
using detail::workers;

[[noreturn]] void bad_config(const std::string& what) {
    throw std::invalid_argument("respool::sqlite::pool: " + what);
}

// A private in-memory database would be a different one for every connection.
void check_path(const std::string& path) {
    const std::string hint =
        " gives every connection a database of its own and cannot be pooled; use a file, or the shared "
        "in-memory form \"file:/name?vfs=memdb\"";
    if (path.empty()) bad_config("path \"\" (a temporary database)" + hint);
    if (path == ":memory:") bad_config("path \":memory:\"" + hint);
    if (path.rfind("file:", 0) != 0) return;
    const auto q = path.find('?');
    const std::string file = path.substr(5, q == std::string::npos ? std::string::npos : q - 5);
    const std::string query = q == std::string::npos ? "" : path.substr(q);
    if (query.find("vfs=memdb") != std::string::npos) {
        if (file.empty() || file[0] != '/')
            bad_config("path \"" + path +
                       "\": a memdb database is shared only when its name begins with '/'");
        return;
    }
    if (file.empty() || file == ":memory:" || query.find("mode=memory") != std::string::npos)
        bad_config("path \"" + path + "\"" + hint);
}

void check(const pool_config& c) {
    check_path(c.path);
    if (c.borrow_timeout < duration::zero()) bad_config("borrow_timeout must not be negative");
    if (c.statement_timeout < duration::zero()) bad_config("statement_timeout must not be negative");
    if (c.busy_timeout < duration::zero()) bad_config("busy_timeout must not be negative");
}

respool::pool_options options_of(const pool_config& c, role r) {
    respool::pool_options o;
    o.min = 0;  // opened on first use
    o.max = r == role::writer ? 1 : c.readers;
    o.acquire_timeout = c.borrow_timeout;
    o.max_waiters = c.max_waiters;
    o.idle_ttl = r == role::writer ? duration{} : c.idle_ttl;  // the writer stays open
    o.acquire_ttl = c.acquire_ttl;
    o.create_timeout = c.busy_timeout + std::chrono::seconds(10);  // the open may wait for a lock
    o.reset_timeout = c.reset_timeout;
    o.record_timings = c.record_timings;
    return o;
}

hooks<connection> hooks_of(const pool_config& c, role r, std::shared_ptr<workers> threads) {
    connection_options opts;
    opts.path = c.path;
    opts.reader = r == role::reader;
    opts.busy_timeout = c.busy_timeout;
    opts.journal_mode = c.journal_mode;
    opts.synchronous = c.synchronous;
    opts.foreign_keys = c.foreign_keys;
    opts.statement_cache_capacity = c.statement_cache_capacity;
    hooks<connection> h;
    h.factory = [opts, threads, timeout = c.statement_timeout,
                 tracer = c.tracer]() -> asio::awaitable<connection> {
        connection conn(co_await asio::this_coro::executor, threads->tp.get_executor(), threads);
        auto [ec] = co_await conn.async_open(opts, asio::as_tuple(asio::use_awaitable));
        if (ec) throw error_with_diagnostics(ec, conn.last_error());  // the path and SQLite's words
        conn.set_statement_timeout(timeout);
        conn.set_tracer(tracer);
        co_return conn;
    };
    h.before_acquire = [](connection& conn) { return conn.is_open(); };
    h.needs_reset = [timeout = c.statement_timeout, policy = c.reset](connection& conn) {
        conn.set_statement_timeout(timeout);  // a borrower's own deadline ends with its lease
        return conn.needs_reset(policy);
    };
    h.before_release = [policy = c.reset](connection& conn) -> asio::awaitable<bool> {
        auto [ec] = co_await conn.async_reset(policy, asio::as_tuple(asio::use_awaitable));
        co_return !ec;
    };
    return h;
}

std::string describe(const pool_stats& s, role r) {
    return std::string("no ") + (r == role::writer ? "writer" : "reader") +
           " connection free within the borrow timeout: " + std::to_string(s.active) + " in use of max " +
           std::to_string(s.max) + ", " + std::to_string(s.waiting) + " waiting";
}

// Why a borrow of `r` failed, in words: how the pool stood when none was free in time, else the
// factory's words (an open's failure names the path).
auto explainer(const std::shared_ptr<pool_state>& s, role r) {
    return [s, r](const error_code& ec, const std::string& own) {
        return ec == respool::errc::exhausted ? describe(s->of(r).stats(), r) : own;
    };
}

// Whether `ec` is the failure c.last_error() describes: then those are its words.
bool is_last_failure(const connection& c, const error_code& ec) {
    const diagnostics& d = c.last_error();
    return !d.message.empty() && d.code != 0 && result_code_of(ec) == d.code;
}

using query_handler = asio::any_completion_handler<void(error_code, result)>;

// pool::async_query on the writer: acquire it, query, give it back. (Reads go to read batches,
// read_batch.hpp; a statement a reader refused comes here from there.)
struct pool_query : std::enable_shared_from_this<pool_query> {
    pool_query(std::shared_ptr<pool_state> st, query_handler h, std::string q, std::optional<params> pr,
               respool::diagnostics* d)
        : s(std::move(st)), handler(std::move(h)), sql(std::move(q)), p(std::move(pr)), diag(d) {}
    std::shared_ptr<pool_state> s;
    query_handler handler;
    std::string sql;
    std::optional<params> p;
    respool::diagnostics* diag;  // the caller's, or nullptr
    lease<connection> l;

    void start() {
        respool::detail::db::acquire(*s->writer, s->cfg.borrow_timeout, diag, handler.get_cancellation_slot(),
                                     explainer(s, role::writer),
                                     [self = shared_from_this()](error_code ec, lease<connection> got) {
                                         if (ec) return self->deliver(ec, {});
                                         self->l = std::move(got);
                                         self->run();
                                     });
    }

    void run() {
        auto done = [self = shared_from_this()](error_code ec, result res) {
            if (ec && self->diag) {
                const diagnostics words =
                    is_last_failure(*self->l, ec) ? self->l->last_error() : diagnostics{};
                self->diag->message = sqlite::describe(ec, words);
                self->diag->error = std::make_exception_ptr(error_with_diagnostics(ec, words));
            }
            if (ec == condition::connection_broken)
                self->l.poison();
            else
                self->l.release();  // reset on the way back when the statement left something open
            self->deliver(ec, std::move(res));
        };
        auto slot = handler.get_cancellation_slot();
        if (p)
            l->async_query(std::move(sql), std::move(*p),
                           asio::bind_cancellation_slot(slot, std::move(done)));
        else
            l->async_query(std::move(sql), asio::bind_cancellation_slot(slot, std::move(done)));
    }

    void deliver(error_code ec, result r) {
        auto h = std::move(handler);
        asio::dispatch(asio::append(std::move(h), ec, std::move(r)));  // on the handler's executor
    }
};

}  // namespace

namespace detail {

void query_on_writer(const std::shared_ptr<pool_state>& s, std::string sql, std::optional<params> p,
                     query_handler h, respool::diagnostics* diag) {
    std::make_shared<pool_query>(s, std::move(h), std::move(sql), std::move(p), diag)->start();
}

asio::awaitable<lease<connection>> acquire(std::shared_ptr<pool_state> s, role r) {
    return respool::detail::db::acquire_or_throw(s->of(r), s->cfg.borrow_timeout, explainer(s, r));
}

asio::awaitable<void> begin(connection& c, const transaction_options& o) {
    auto [ec, r] =
        co_await c.async_query(o.read_only ? "BEGIN" : "BEGIN IMMEDIATE", asio::as_tuple(asio::deferred));
    if (ec) throw error_with_diagnostics(ec, c.last_error());
}

asio::awaitable<void> commit(connection& c) {
    auto [ec, r] = co_await c.async_query("COMMIT", asio::as_tuple(asio::deferred));
    if (ec) throw error_with_diagnostics(ec, c.last_error());
}

asio::awaitable<bool> recover(connection& c, std::exception_ptr& error, bool attempts_left) {
    explain(c, error);  // before the ROLLBACK: the connection's last failure is the statement's
    const error_code ec = respool::detail::db::code_of(error);
    if (ec == condition::connection_broken || !c.is_open()) co_return false;
    if (c.in_transaction()) {
        auto [rollback, r] = co_await c.async_query("ROLLBACK", asio::as_tuple(asio::deferred));
        if (rollback) co_return false;  // the release resets the connection or destroys it
    }
    co_return attempts_left&& ec == condition::busy;
}

void explain(const connection& c, std::exception_ptr& error) noexcept {
    respool::detail::db::explain<error_with_diagnostics>(c, error, &is_last_failure);
}

void settle(lease<connection>& l, std::exception_ptr& error) noexcept {
    respool::detail::db::settle(l, error, &explain, condition::connection_broken);
}

}  // namespace detail

pool::pool(executor_type ex, pool_config cfg) : state_(std::make_shared<pool_state>()) {
    check(cfg);
    state_->cfg = std::move(cfg);
    const auto& c = state_->cfg;
    state_->threads = std::make_shared<workers>(c.threads ? c.threads : c.readers + 1);
    state_->writer.emplace(ex, options_of(c, role::writer), hooks_of(c, role::writer, state_->threads));
    if (c.readers > 0)
        state_->readers.emplace(ex, options_of(c, role::reader), hooks_of(c, role::reader, state_->threads));
    state_->reads.timer.emplace(ex);
}
pool::~pool() = default;  // closes (state_handle)
pool::pool(pool&&) noexcept = default;
pool& pool::operator=(pool&&) noexcept = default;  // closes what it held first

pool::executor_type pool::get_executor() const noexcept {
    return state_->writer->get_executor();
}
const pool_config& pool::config() const noexcept {
    return state_->cfg;
}
pool_stats pool::writer_stats() const noexcept {
    return state_->writer->stats();
}
pool_stats pool::reader_stats() const noexcept {
    return state_->readers ? state_->readers->stats() : pool_stats{};
}
void pool::close() noexcept {
    state_.close();
}
respool::pool<connection>& pool::writer_pool() noexcept {
    return *state_->writer;
}
respool::pool<connection>& pool::reader_pool() noexcept {
    return state_->of(role::reader);
}

void pool::start_acquire(role r, respool::detail::db::borrow_deadline when,
                         asio::any_completion_handler<void(error_code, lease<connection>)> handler) {
    auto slot = handler.get_cancellation_slot();
    respool::detail::db::acquire(state_->of(r), when, nullptr, slot, explainer(state_.shared(), r),
                                 [h = std::move(handler)](error_code ec, lease<connection> l) mutable {
                                     asio::dispatch(asio::append(std::move(h), ec, std::move(l)));
                                 });
}

void pool::start_query(std::string sql, std::optional<params> p, respool::diagnostics* diag,
                       query_handler handler, const asio::any_io_executor& /*handler_ex*/) {
    if (diag) diag->clear();
    // A single write with parameters: queued for the writer's next group commit (group_commit.hpp).
    if (p && detail::groupable(sql))
        return detail::submit_write(
            state_.shared(),
            std::make_shared<detail::group_entry>(std::move(sql), std::move(*p), std::move(handler), diag));
    // Anything else: a reader's batch (read_batch.hpp), unless it is known to write.
    if (!state_->readers || state_->writes.count(sql) > 0)
        return detail::query_on_writer(state_.shared(), std::move(sql), std::move(p), std::move(handler),
                                       diag);
    detail::submit_read(state_.shared(), std::make_shared<detail::read_entry>(std::move(sql), std::move(p),
                                                                              std::move(handler), diag));
}

}  // namespace respool::sqlite
