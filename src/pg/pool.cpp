// respool::pg::pool: the hooks that make respool::pool<pg::connection> a PostgreSQL pool, and the
// operations on it. Which hook does what (docs/06-postgresql.md):
//   factory         connect (deadline over DNS, TCP, TLS, auth), statement mode and timeout set
//   before_acquire  alive_nowait(): a dead idle connection is caught without a round trip
//   validate        idle past validate_after: alive_nowait() and validation_query, bounded by check_timeout
//   healthcheck     the same, for idle connections in the background
//   needs_reset     synchronous: anything to reset (transaction, statement running, session changed)?
//   before_release  async_reset (ROLLBACK, session reset, drain), bounded by reset_timeout; after a
//                   failover (read_only on a server that is now read-only) the connection is closed and
//                   every other one retired
#include <respool/pg/pool.hpp>

#include "budget_member.hpp"
#include "connection_impl.hpp"
#include "pipeline_dispatch.hpp"
#include "pool_access.hpp"

#include <respool/detail/db_acquire.hpp>
#include <respool/detail/db_failure.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <libpq-fe.h>

#include <mutex>
#include <stdexcept>

namespace asio = boost::asio;

namespace respool::pg {

namespace detail {

struct pool_state : std::enable_shared_from_this<pool_state> {
    pool_config cfg;
    std::optional<respool::pool<connection>> p;
    std::shared_ptr<pipeline_dispatch> pipelined;  // pipeline_depth > 1 (destroyed before p)
    std::shared_ptr<budget_member> budget;         // pool_config::budget

    void close() noexcept {
        if (pipelined) pipelined->close();
        if (p) p->close();
        // Its row goes once the connections are gone; the state lives until then.
        if (budget) budget->leave(shared_from_this());
    }

    // libpq's message (masked) of the last failed connect, empty after a connect succeeded: why an
    // operation that waited for connects which failed, or met an open circuit, failed.
    void connect_ended(const std::string& failure) {
        std::lock_guard lock(mutex);
        last_connect_failure = failure;
    }
    std::string connect_failure() const {
        std::lock_guard lock(mutex);
        return last_connect_failure;
    }

private:
    mutable std::mutex mutex;  // connects end on the pool's executor, operations on any (thread_safe)
    std::string last_connect_failure;
};

}  // namespace detail

namespace {

using detail::pool_state;

[[noreturn]] void bad_config(const std::string& what) {
    throw std::invalid_argument("respool::pg::pool: " + what);
}

// The settings as the pool uses them: one left at its default never contradicts one that was set.
pool_config resolve_defaults(pool_config c) {
    if (!c.min_idle.is_set() && c.min_idle > c.max) c.min_idle = {by_default, c.max};
    if (!c.max.is_set() && c.max < c.min_idle) c.max = {by_default, c.min_idle};
    if (!c.connect_retry_max.is_set() && c.connect_retry_max < c.connect_retry_initial)
        c.connect_retry_max = {by_default, c.connect_retry_initial};
    if (!c.connect_retry_initial.is_set() && c.connect_retry_initial > c.connect_retry_max)
        c.connect_retry_initial = {by_default, c.connect_retry_max};
    if (c.budget) c.budget = detail::budget_member::resolve_defaults(*c.budget);
    return c;
}

void check(const pool_config& c) {
    // What libpq would refuse at parse time or at the first connect (a malformed option value).
    if (std::string e = conninfo_error(c.conninfo); !e.empty())
        bad_config("conninfo \"" + masked(c.conninfo) + "\": " + e);
    if (c.max == 0) bad_config("max must be at least 1");
    if (c.min_idle > c.max)
        bad_config("min_idle (" + std::to_string(c.min_idle) + ") must not exceed max (" +
                   std::to_string(c.max) + ")");
    if (c.connect_timeout <= duration::zero()) bad_config("connect_timeout must be positive");
    if (c.borrow_timeout < duration::zero()) bad_config("borrow_timeout must not be negative");
    if (c.statement_timeout < duration::zero()) bad_config("statement_timeout must not be negative");
    if (c.cancel_drain_limit <= duration::zero()) bad_config("cancel_drain_limit must be positive");
    if (c.alive_check_after < duration::zero()) bad_config("alive_check_after must not be negative");
    if (c.pipeline_depth == 0) bad_config("pipeline_depth must be at least 1 (1: no pipelining)");
    // respool::validate would name these by the generic pool's options (create_retry_initial, ...).
    if (c.connect_retry_initial < duration::zero()) bad_config("connect_retry_initial must not be negative");
    if (c.connect_retry_max < c.connect_retry_initial)
        bad_config("connect_retry_max must not be below connect_retry_initial");
    if (c.budget) detail::budget_member::check(*c.budget);
    // The circuit's options, before the pool exists (its constructor starts the pre-warm).
    if (c.circuit) {
        try {
            failure_threshold_strategy check_only(*c.circuit);
        } catch (const std::invalid_argument& e) {
            bad_config(std::string("circuit: ") + e.what());
        }
    }
}

respool::pool_options options_of(const pool_config& c) {
    respool::pool_options o;
    o.min = c.budget ? 0 : c.min_idle.value();  // under a budget, idle connections would hold others' slots
    o.max = c.max;
    o.acquire_timeout = c.borrow_timeout;
    o.max_waiters = c.max_waiters;
    o.thread_safe = c.thread_safe;
    o.record_timings = c.record_timings;
    o.idle_ttl = c.idle_ttl;
    o.acquire_ttl = c.acquire_ttl;
    o.max_lifetime = c.max_lifetime;
    o.health_check_on_borrow = c.health_check_on_borrow;
    o.validate_after = c.validate_after;
    o.healthcheck_interval = c.healthcheck_interval;
    // The connect's own deadline comes first; duration::max() (no deadline) stays that, not an overflow.
    constexpr duration margin = std::chrono::seconds(5);
    o.create_timeout =
        c.connect_timeout > duration::max() - margin ? duration::max() : c.connect_timeout + margin;
    o.check_timeout = c.check_timeout;
    o.reset_timeout = c.reset_timeout;
    o.create_retry_initial = c.connect_retry_initial;
    o.create_retry_max = c.connect_retry_max;
    return o;
}

hooks<connection> hooks_of(const pool_config& c, std::weak_ptr<pool_state> owner, asio::any_io_executor ex,
                           std::function<void(connection&)> on_return) {
    hooks<connection> h;
    h.factory = [info = c.conninfo, timeout = c.connect_timeout, mode = c.statements,
                 capacity = c.statement_cache_capacity, statement_timeout = c.statement_timeout,
                 drain_limit = c.cancel_drain_limit, tracer = c.tracer,
                 owner]() -> asio::awaitable<connection> {
        duration left = timeout;
        if (std::shared_ptr<detail::budget_member> b = [&] {
                auto s = owner.lock();
                return s ? s->budget : nullptr;
            }()) {
            // Under a shared budget a connect waits for a share (up to half its timeout) instead of
            // meeting "too many connections"; the other half is the connect's.
            const auto start = std::chrono::steady_clock::now();
            if (!co_await b->wait_for_share(timeout / 2))
                throw boost::system::system_error(
                    respool::errc::exhausted,
                    "no share of the shared connection budget yet (the other members "
                    "have not given back enough connections)");
            left = timeout - std::chrono::duration_cast<duration>(std::chrono::steady_clock::now() - start);
        }
        connection conn(co_await asio::this_coro::executor);
        auto [ec] = co_await conn.async_connect(info, left, asio::as_tuple(asio::use_awaitable));
        if (auto s = owner.lock(); s && ec != asio::error::operation_aborted)  // not a pool closing
            s->connect_ended(ec ? conn.last_error().message : std::string());
        if (ec) throw error_with_diagnostics(ec, conn.last_error());  // libpq's words, masked
        conn.set_statement_mode(mode, capacity);
        conn.set_statement_timeout(statement_timeout);
        conn.set_cancel_drain_limit(drain_limit);
        conn.set_tracer(tracer);
        co_return conn;
    };
    auto ping = [query = c.validation_query, tracer = c.tracer](connection& conn) -> asio::awaitable<bool> {
        if (!conn.alive_nowait()) co_return false;
        conn.set_tracer(nullptr);  // the pool's own check, not a borrower's statement: not traced
        auto [ec, r] = co_await conn.async_query(query, asio::as_tuple(asio::use_awaitable));
        conn.set_tracer(tracer);
        co_return !ec;
    };
    h.validate = ping;
    h.healthcheck = ping;
    h.before_acquire = [trust = c.alive_check_after](connection& conn) { return conn.alive_nowait(trust); };
    h.needs_reset = [policy = c.reset, statement_timeout = c.statement_timeout,
                     on_return = std::move(on_return)](connection& conn) {
        if (on_return) on_return(conn);
        conn.set_statement_timeout(statement_timeout);  // a borrower's own deadline ends with its lease
        return conn.failover_detected() || conn.needs_reset(policy);
    };
    h.before_release = [policy = c.reset, owner, ex](connection& conn) -> asio::awaitable<bool> {
        if (conn.failover_detected()) {
            // The server was demoted: what was connected before now may point at it too.
            asio::post(ex, [owner] {
                if (auto s = owner.lock(); s && s->p) s->p->retire_all();
            });
            co_return false;
        }
        auto [ec] = co_await conn.async_reset(policy, asio::as_tuple(asio::use_awaitable));
        co_return !ec;
    };
    return h;
}

// The circuit of a database pool opens when connections cannot be made (the server is down or
// refuses), not when the pool discards connections that died while idle or broke under a statement:
// those it replaces by itself, and right after a server restart every one of them breaks at once
// while the server is already back. If it stays down, the replacements' connects fail and count.
class connect_failure_strategy final : public circuit_strategy {
public:
    explicit connect_failure_strategy(breaker_options o) : inner_(o) {}
    void report_success(circuit_breaker& cb) override { inner_.report_success(cb); }
    void report_failure(circuit_breaker& cb, const error_code& ec) override {
        // exhausted: a connect found no share of a shared budget yet; the server is fine.
        if (ec != respool::errc::broken && ec != respool::errc::poisoned && ec != respool::errc::exhausted)
            inner_.report_failure(cb, ec);
    }

private:
    failure_threshold_strategy inner_;
};

// What an exhausted acquire says about the pool (no credentials: counts only).
std::string describe(const pool_stats& s) {
    return "no connection free within the borrow timeout: " + std::to_string(s.active) + " in use of max " +
           std::to_string(s.max) + ", " + std::to_string(s.idle) + " idle, " + std::to_string(s.waiting) +
           " waiting, " + std::to_string(s.creating) + " connecting, circuit " + to_string(s.circuit);
}

// Why an acquire failed, for its caller: the connect's own message when a connect made for it failed
// (`own`), the pool's state when none was free in time, and for those and an open circuit, libpq's
// message of the last failed connect (every message masked).
std::string explained(const pool_state& s, const error_code& ec, const std::string& own) {
    const std::string last = s.connect_failure();
    if (ec == respool::errc::exhausted || ec == respool::errc::timeout)
        return describe(s.p->stats()) + (last.empty() ? "" : "; the last connect failed: " + last);
    if (!own.empty()) return own;
    if (ec == respool::errc::unavailable)
        return "the circuit is open" + (last.empty() ? std::string() : ": the last connect failed: " + last);
    if (ec == condition::connection_broken && !last.empty()) return last;
    return ec.message();
}

// explained() as the shared borrow takes it.
auto explainer(const std::shared_ptr<pool_state>& s) {
    return [s](const error_code& ec, const std::string& own) { return explained(*s, ec, own); };
}

// Whether `ec` is the failure c.last_error() describes (same SQLSTATE, or a connection-side failure
// with a message): then those are its words.
bool is_last_failure(const connection& c, const error_code& ec) {
    const diagnostics& d = c.last_error();
    if (d.message.empty()) return false;
    if (ec.category() == sqlstate_category()) return sqlstate_of(ec) == d.sqlstate;
    return ec.category() == category() && d.sqlstate.empty();
}

using query_handler = asio::any_completion_handler<void(error_code, result)>;

// A pipelined statement's handler: a failure the pipeline did not put in words (a server error it
// did: the wait's exhausted, closed, cancelled, a broken connection) gets its code's message. Keeps
// the handler's executor and cancellation slot.
query_handler with_code_words(query_handler h, respool::diagnostics* diag) {
    auto slot = h.get_cancellation_slot();
    return asio::bind_cancellation_slot(slot, [h = std::move(h), diag](error_code ec, result r) mutable {
        if (ec && diag->message.empty()) {
            diag->message = ec.message();
            diag->error = std::make_exception_ptr(error_with_diagnostics(ec, {}));
        }
        asio::dispatch(asio::append(std::move(h), ec, std::move(r)));  // on the handler's executor
    });
}

// pool::async_query while its borrow waits: what the statement needs once a connection is lent.
struct pool_query {  // an aggregate (braced: clang 14 has no parenthesised aggregate init)
    std::shared_ptr<pool_state> s;
    query_handler handler;
    asio::any_io_executor handler_ex;  // the handler's, when an any_io_executor (handler_executor.hpp)
    std::string sql;
    std::optional<params> p;
    respool::diagnostics* diag;  // the caller's, or nullptr

    static void deliver(const std::shared_ptr<pool_query>& op, error_code ec, result r) {
        auto h = std::move(op->handler);
        asio::dispatch(asio::append(std::move(h), ec, std::move(r)));  // on the handler's executor
    }
};

}  // namespace

namespace detail {

void report_failure(respool::diagnostics& out, const connection& c, const error_code& ec) {
    const diagnostics d = is_last_failure(c, ec) ? c.last_error() : diagnostics{};
    out.message = describe(ec, d);
    out.error = std::make_exception_ptr(error_with_diagnostics(ec, d));
}

asio::awaitable<lease<connection>> acquire(std::shared_ptr<pool_state> s) {
    return respool::detail::db::acquire_or_throw(*s->p, s->cfg.borrow_timeout, explainer(s));
}

lease<connection> take_free(pool_state& s) noexcept {
    if (s.cfg.thread_safe || !s.p) return {};
    return respool::detail::pool_access::take_now(*s.p);
}

namespace {
std::string begin_statement_for(const transaction_options& o) {
    std::string sql = "BEGIN";
    switch (o.level) {
    case isolation::server_default: break;
    case isolation::read_committed: sql += " ISOLATION LEVEL READ COMMITTED"; break;
    case isolation::repeatable_read: sql += " ISOLATION LEVEL REPEATABLE READ"; break;
    case isolation::serializable: sql += " ISOLATION LEVEL SERIALIZABLE"; break;
    }
    if (o.read_only) sql += " READ ONLY";
    return sql;
}
}  // namespace

bool begin_with_first_statement(connection& c, const transaction_options& o) {
    if (!c.is_open() || c.transaction_state() != transaction_status::idle) return false;
    // Sent with the first statement, in its round trip (a transaction of n statements costs n + 1
    // round trips with its COMMIT, not n + 2).
    detail::defer_begin(c, begin_statement_for(o));
    return true;
}

asio::awaitable<void> begin(connection& c, const transaction_options& o) {
    auto [ec, r] = co_await c.async_query(begin_statement_for(o), asio::as_tuple(asio::deferred));
    if (ec) throw error_with_diagnostics(ec, c.last_error());
}

std::optional<commit_plan> plan_commit(connection& c, commit_token* lsn) {
    if (detail::drop_deferred_begin(c)) return std::nullopt;  // no statement ran: there is nothing to commit
    // No transaction open on the server: its BEGIN failed (fn went on past the error), or fn ended it
    // itself. fn's statements were not one transaction, and a COMMIT now would only warn.
    const transaction_status state = c.transaction_state();
    if (c.is_open() && state == transaction_status::idle)
        throw boost::system::system_error(
            sqlstate_error("25P01"),
            "no transaction was open at COMMIT: its BEGIN failed, or fn ended the transaction itself");
    // The server ends a failed transaction's COMMIT as a rollback, without an error: seen in the
    // command tag, or before sending, in the session's state (then there is no position to read).
    commit_plan p;
    p.failed = state == transaction_status::in_error;
    p.with_lsn = lsn && !p.failed;
    return p;
}

const char* commit_statement(const commit_plan& p) noexcept {
    // With a token: the position read after the COMMIT, in the same round trip (a script: COMMIT ends
    // the transaction, the SELECT runs on its own; a failed COMMIT stops the script).
    return p.with_lsn ? "COMMIT; SELECT pg_current_wal_insert_lsn()::text" : "COMMIT";
}

void conclude_commit(const connection& c, const commit_plan& p, commit_token* lsn, error_code ec,
                     const result& r) {
    if (ec) throw error_with_diagnostics(ec, c.last_error());
    if (p.failed || (!p.with_lsn && r.command_tag() == "ROLLBACK"))
        throw boost::system::system_error(sqlstate_error("25P02"),
                                          "COMMIT rolled back the transaction: a statement in it failed");
    if (p.with_lsn && r.rows() == 1 && !r.is_null(0, 0))
        if (auto t = commit_token_from_string(r.text(0, 0))) *lsn = *t;
}

asio::awaitable<bool> recover(connection& c, std::exception_ptr& error, bool attempts_left) {
    explain(c, error);               // before the ROLLBACK: the connection's last failure is the statement's
    detail::drop_deferred_begin(c);  // failed before its first statement: nothing was sent
    const error_code ec = respool::detail::db::code_of(error);
    if (ec == condition::connection_broken || !c.is_open()) co_return false;
    const auto st = c.transaction_state();
    if (st == transaction_status::in_transaction || st == transaction_status::in_error) {
        auto [rollback, r] = co_await c.async_query("ROLLBACK", asio::as_tuple(asio::deferred));
        if (rollback) co_return false;  // the release resets the connection or closes it
    }
    co_return attempts_left && (ec == condition::serialization_failure || ec == condition::deadlock);
}

void explain(const connection& c, std::exception_ptr& error) noexcept {
    respool::detail::db::explain<error_with_diagnostics>(c, error, &is_last_failure);
}

void settle(lease<connection>& l, std::exception_ptr& error) noexcept {
    respool::detail::db::settle(l, error, &explain, condition::connection_broken);
}

}  // namespace detail

pool::pool(executor_type ex, pool_config cfg) : pool(std::move(ex), std::move(cfg), nullptr) {}

pool::pool(executor_type ex, pool_config cfg, std::function<void(connection&)> on_return)
    : state_(std::make_shared<pool_state>()) {
    cfg = resolve_defaults(std::move(cfg));
    check(cfg);
    state_->cfg = std::move(cfg);
    state_->p.emplace(ex, options_of(state_->cfg),
                      hooks_of(state_->cfg, state_.shared(), ex, std::move(on_return)));
    if (state_->cfg.circuit)
        state_->p->set_circuit_strategy(std::make_shared<connect_failure_strategy>(*state_->cfg.circuit));
    const pool_config& c = state_->cfg;
    if (c.pipeline_depth > 1)
        state_->pipelined = std::make_shared<detail::pipeline_dispatch>(
            *state_->p, ex,
            detail::pipeline_dispatch::settings{c.pipeline_depth, c.max, c.borrow_timeout,
                                                c.statement_timeout});
    if (c.budget) {
        // The member's view of the pool: nothing once the pool state is gone.
        std::weak_ptr<pool_state> w = state_.shared();
        detail::budget_member::pool_view view;
        view.stats = [w] {
            auto s = w.lock();
            return s ? s->p->stats() : pool_stats{};
        };
        view.set_max = [w](std::size_t n) {
            if (auto s = w.lock(); s && !s->p->stats().closed) s->p->set_max(n);
        };
        view.retire_all = [w] {
            if (auto s = w.lock()) s->p->retire_all();
        };
        view.retry_now = [w] {
            if (auto s = w.lock()) s->p->retry_now();
        };
        view.log = [w](log_level level, const std::string& line) {
            if (auto s = w.lock()) s->p->log(level, line);
        };
        state_->budget = std::make_shared<detail::budget_member>(ex, c.conninfo, *c.budget, c.max,
                                                                 c.connect_timeout, std::move(view));
        state_->budget->start();
    }
}
pool::~pool() = default;  // closes (state_handle)
pool::pool(pool&&) noexcept = default;
pool& pool::operator=(pool&&) noexcept = default;  // closes what it held first

void detail::pool_access::run_query(lease<connection> l, std::string sql, std::optional<params> q,
                                    respool::diagnostics* diag, query_handler handler) {
    if (diag) diag->clear();
    detail::start_query_on_lease(std::move(l), std::move(sql), std::move(q), diag, std::move(handler));
}

bool detail::pool_access::pipelined(const pool& p, const std::string& sql, const std::optional<params>& q) {
    return p.state_->pipelined && q && detail::pipelinable(sql);
}

void detail::pool_access::budget_vanish(pool& p) {
    if (p.state_->budget) p.state_->budget->vanish();
}

pool::executor_type pool::get_executor() const noexcept {
    return state_->p->get_executor();
}
const pool_config& pool::config() const noexcept {
    return state_->cfg;
}
pool_stats pool::stats() const noexcept {
    return state_->p->stats();
}
respool::pg::budget_stats pool::budget_stats() const {
    return state_->budget ? state_->budget->stats() : respool::pg::budget_stats{};
}
circuit_state pool::state() const {
    return state_->p->state();
}
void pool::retire_all() noexcept {
    state_->p->retire_all();
}
void pool::close() noexcept {
    state_.close();
}
respool::pool<connection>& pool::base() noexcept {
    return *state_->p;
}

void pool::start_close(duration grace, asio::any_completion_handler<void(error_code)> handler) {
    std::shared_ptr<detail::pool_state> s = state_.shared();
    auto closing = [](std::shared_ptr<detail::pool_state> st, duration g) -> asio::awaitable<error_code> {
        auto [ec] = co_await st->p->async_close(g, asio::as_tuple(asio::use_awaitable));
        st->close();  // the budget's leave (idempotent: the pool is closed already)
        if (st->budget) co_await st->budget->wait_left();
        co_return ec;
    };
    asio::co_spawn(s->p->get_executor(), closing(s, grace),
                   [h = std::move(handler)](std::exception_ptr, error_code ec) mutable { std::move(h)(ec); });
}

void pool::start_execute(batch b,
                         asio::any_completion_handler<void(error_code, std::vector<batch_outcome>)> handler) {
    using outcome = std::pair<error_code, std::vector<batch_outcome>>;
    const std::size_t n = b.size();
    auto run = [n](std::shared_ptr<detail::pool_state> s, batch bb) -> asio::awaitable<outcome> {
        // The caller's cancellation, of any type, reaches the borrow and then the batch; after it
        // the coroutine goes on, so that the connection goes back as after any batch.
        co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
        co_await asio::this_coro::throw_if_cancelled(false);
        lease<connection> l = co_await detail::acquire(std::move(s));
        // Cancelled as the borrow ended (its lease already decided): nothing is sent.
        const asio::cancellation_state cancel = co_await asio::this_coro::cancellation_state;
        if (cancel.cancelled() != asio::cancellation_type::none) {
            const error_code aborted = asio::error::operation_aborted;
            co_return outcome{aborted,
                              std::vector<batch_outcome>(
                                  n, batch_outcome{aborted, {}, "not sent: the batch was cancelled"})};
        }
        auto fn = [&bb](connection& c) -> asio::awaitable<outcome> {
            auto [ec, out] = co_await c.async_execute(std::move(bb), asio::as_tuple(asio::use_awaitable));
            co_return outcome{ec, std::move(out)};
        };
        co_return co_await respool::detail::db::with_lease<outcome>(std::move(l), fn, &detail::settle);
    };
    auto slot = handler.get_cancellation_slot();
    auto done = [h = std::move(handler), n](std::exception_ptr e, outcome r) mutable {
        // (co_spawn leaves its cancellation handler in the caller's slot: gone before the caller runs.)
        if (auto caller = h.get_cancellation_slot(); caller.is_connected()) caller.clear();
        if (e) {  // the borrow failed: every statement with its error
            error_code ec = respool::errc::create_failed;
            std::string why;
            try {
                std::rethrow_exception(e);
            } catch (const boost::system::system_error& x) {
                ec = x.code();
                why = x.what();
            } catch (const std::exception& x) {
                why = x.what();
            }
            r.first = ec;
            r.second.assign(n, batch_outcome{ec, {}, why});
        }
        asio::dispatch(
            asio::append(std::move(h), r.first, std::move(r.second)));  // on the handler's executor
    };
    // (co_spawn connects the coroutine to the slot only when the slot is connected.)
    asio::co_spawn(state_->p->get_executor(), run(state_.shared(), std::move(b)),
                   asio::bind_cancellation_slot(slot, std::move(done)));
}

void pool::start_acquire(respool::detail::db::borrow_deadline when, respool::diagnostics* diag,
                         asio::any_completion_handler<void(error_code, lease<connection>)> handler) {
    auto slot = handler.get_cancellation_slot();
    respool::detail::db::acquire(*state_->p, when, diag, slot, explainer(state_.shared()),
                                 [h = std::move(handler)](error_code ec, lease<connection> l) mutable {
                                     asio::dispatch(asio::append(std::move(h), ec, std::move(l)));
                                 });
}

void pool::start_query(std::string sql, std::optional<params> p, respool::diagnostics* diag,
                       query_handler handler, asio::any_io_executor handler_ex) {
    if (diag) diag->clear();
    if (state_->pipelined && p && detail::pipelinable(sql)) {
        // (A new handler, not assigned over the old one: Boost 1.81's any_completion_handler
        // move-assignment recurses.)
        query_handler h = diag ? with_code_words(std::move(handler), diag) : std::move(handler);
        // The words' wrapper has no executor of its own: the pipeline asks it (no wrap), and the wrapper
        // then dispatches to the caller's handler (which does wrap its executor: the diagnostics' price).
        if (diag) handler_ex = {};
        if (!state_->cfg.thread_safe)
            return state_->pipelined->submit(std::move(sql), std::move(*p), std::move(h), diag,
                                             std::move(handler_ex));
        // From any thread: the pipelines live on the pool's executor (a strand, then).
        return asio::dispatch(state_->p->get_executor(),
                              [d = state_->pipelined, s = std::move(sql), q = std::move(*p), h = std::move(h),
                               diag, hx = std::move(handler_ex)]() mutable {
                                  d->submit(std::move(s), std::move(q), std::move(h), diag, std::move(hx));
                              });
    }
    // A connection free now goes straight to the statement, on this thread: the caller of a pool that
    // is not thread_safe is on the pool's executor, where the borrow's completion would run it. The
    // handler still never runs inside this call (the statement completes after its round trip, an
    // immediate failure is posted). Otherwise, or from any thread, the borrow goes as async_acquire.
    if (!state_->cfg.thread_safe) {
        if (lease<connection> l = respool::detail::pool_access::take_now(*state_->p))
            return detail::start_query_on_lease(std::move(l), std::move(sql), std::move(p), diag,
                                                std::move(handler), std::move(handler_ex));
    }
    auto op = std::make_shared<pool_query>(pool_query{
        state_.shared(), std::move(handler), std::move(handler_ex), std::move(sql), std::move(p), diag});
    auto acquired = [op](error_code ec, lease<connection> l) {
        if (ec) return pool_query::deliver(op, ec, {});  // its words: the shared borrow's
        // The statement, then the lease back (poisoned after a connection-level failure), then the
        // handler: all done by the statement's own operation.
        detail::start_query_on_lease(std::move(l), std::move(op->sql), std::move(op->p), op->diag,
                                     std::move(op->handler), std::move(op->handler_ex));
    };
    respool::detail::db::acquire(*state_->p, state_->cfg.borrow_timeout, diag,
                                 op->handler.get_cancellation_slot(), explainer(state_.shared()),
                                 std::move(acquired));
}

}  // namespace respool::pg
