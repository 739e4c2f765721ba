#include "budget_member.hpp"

#include "budget_share.hpp"

#include <respool/pg/errors.hpp>
#include <respool/pg/values.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>  // program_invocation_short_name (glibc)
#include <charconv>
#include <cstring>
#include <random>
#include <stdexcept>

namespace asio = boost::asio;

namespace respool::pg::detail {

namespace {

using clock = std::chrono::steady_clock;

[[noreturn]] void bad_config(const std::string& what) {
    throw std::invalid_argument("respool::pg::pool: budget: " + what);
}

bool is_uuid(const std::string& s) {
    if (s.size() != 36) return false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !std::isxdigit(static_cast<unsigned char>(s[i]))) return false;
    }
    return true;
}

std::string random_uuid() {
    std::random_device rd;
    std::mt19937_64 g((std::uint64_t{rd()} << 32) ^ rd());
    std::uint64_t hi = g(), lo = g();
    hi = (hi & ~std::uint64_t{0xF000}) | 0x4000;                           // version 4
    lo = (lo & ~(std::uint64_t{0xC} << 60)) | (std::uint64_t{0x8} << 60);  // variant 10
    char out[37];
    std::snprintf(out, sizeof out, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(hi >> 32),
                  static_cast<unsigned>((hi >> 16) & 0xFFFF), static_cast<unsigned>(hi & 0xFFFF),
                  static_cast<unsigned>(lo >> 48), static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFull));
    return out;
}

std::string quote_identifier(const std::string& name) {
    std::string q = "\"";
    for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

// The advisory lock every member of one schema's table takes: FNV-1a over a fixed prefix and the
// schema name, so that two budgets in two schemas do not wait for each other.
std::int64_t lock_key_of(const std::string& schema) {
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : "respool_budget:" + schema) {
        h ^= c;
        h *= 1099511628211ull;
    }
    std::int64_t k;
    std::memcpy(&k, &h, sizeof k);
    return k;
}

std::int64_t number(const result& r, std::size_t row, std::size_t col, std::int64_t if_null) {
    if (r.is_null(row, col)) return if_null;
    const std::string_view t = r.text(row, col);
    std::int64_t v = if_null;
    std::from_chars(t.data(), t.data() + t.size(), v);
    return v;
}

std::string host_name() {
    char buf[256] = {};
    if (gethostname(buf, sizeof buf - 1) != 0) return {};
    return buf;
}

std::string program_name() {
    return program_invocation_short_name ? program_invocation_short_name : "";
}

// The pool's connection string naming the member connection (a later keyword wins in libpq):
// operators tell it apart from the pooled ones in pg_stat_activity from its first moment.
std::string member_conninfo(const std::string& conninfo) {
    const bool uri = conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0;
    if (uri)
        return conninfo + (conninfo.find('?') == std::string::npos ? "?" : "&") +
               "application_name=respool%20budget%20member";
    return conninfo + " application_name='respool budget member'";
}

}  // namespace

void budget_member::check(const budget_config& c) {
    if (c.schema.empty()) bad_config("schema is required (the schema that holds respool_budget)");
    if (c.schema.size() > 63) bad_config("schema \"" + c.schema + "\" is longer than 63 bytes");
    if (c.heartbeat <= std::chrono::milliseconds::zero()) bad_config("heartbeat must be positive");
    if (c.lease <= c.heartbeat) bad_config("lease must exceed heartbeat");
    if (!c.instance_id.empty() && !is_uuid(c.instance_id))
        bad_config("instance_id \"" + c.instance_id + "\" is not a UUID (8-4-4-4-12 hexadecimal digits)");
}

budget_member::budget_member(asio::any_io_executor ex, std::string conninfo, budget_config cfg,
                             std::size_t configured_max, duration connect_timeout, pool_view pool)
    : ex_(ex),
      conninfo_(std::move(conninfo)),
      cfg_(std::move(cfg)),
      configured_max_(configured_max),
      connect_timeout_(connect_timeout),
      pool_(std::move(pool)),
      quoted_schema_(quote_identifier(cfg_.schema)),
      lock_key_(lock_key_of(cfg_.schema)),
      timer_(ex) {
    if (cfg_.instance_id.empty()) cfg_.instance_id = random_uuid();
    for (char& c : cfg_.instance_id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    stats_.enabled = true;
}

std::string budget_member::table() const {
    return quoted_schema_ + ".respool_budget";
}

std::string budget_member::channel() const {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(lock_key_));
    return std::string("respool_budget_") + hex;
}

std::string budget_member::notify() const {
    return "SELECT pg_notify('" + channel() + "', '" + cfg_.instance_id + "')";
}

void budget_member::start() {
    apply_cap(0);
    asio::co_spawn(ex_, run(shared_from_this()), asio::detached);
}

void budget_member::leave(std::shared_ptr<void> keepalive) {
    asio::dispatch(ex_, [self = shared_from_this(), k = std::move(keepalive)]() mutable {
        if (self->stopping_ || self->vanished_) return;  // (a vanished member holds nothing)
        self->stopping_ = true;
        self->leave_keepalive_ = std::move(k);
        self->timer_.cancel();
    });
}

void budget_member::vanish() {
    asio::dispatch(ex_, [self = shared_from_this()] {
        self->vanished_ = true;
        self->timer_.cancel();
    });
}

asio::awaitable<bool> budget_member::wait_for_share(duration limit) {
    if (allowed() > 0) co_return true;
    ++gate_waiters_;
    asio::steady_timer t(co_await asio::this_coro::executor);
    const clock::time_point deadline = clock::now() + limit;
    while (allowed() == 0 && clock::now() < deadline) {
        t.expires_after(std::chrono::milliseconds(20));
        auto [ec] = co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
        if (ec) break;  // the pool is closing
    }
    --gate_waiters_;
    co_return allowed() > 0;
}

budget_stats budget_member::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void budget_member::apply_cap(std::size_t cap) {
    const std::size_t before = cap_;
    cap_ = cap;
    allowed_.store(cap, std::memory_order_release);
    pool_.set_max(std::max<std::size_t>(cap, 1));
    if (cap == 0 && pool_.stats().total > gate_waiters_.load()) pool_.retire_all();
    if (cap > before) pool_.retry_now();  // connects that gave up at the gate need not back off
}

void budget_member::degrade(const std::string& reason) {
    table_ready_ = false;
    if (last_commit_ && clock::now() - *last_commit_ < cfg_.lease) {
        // A member that shares keeps its share while its row is alive (the others count it): a failed
        // tick (a dropped connection, a timeout) is not a reason to take more.
        if (reason != last_note_) {
            last_note_ = reason;
            pool_.log(log_level::warning, "budget: a heartbeat failed: " + reason +
                                              "; keeping the share of " + std::to_string(cap_) +
                                              " while its row lives");
        }
        return;
    }
    apply_cap(configured_max_);
    {
        std::lock_guard lock(mutex_);
        stats_.degraded = reason;
    }
    if (reason != last_note_) {
        last_note_ = reason;
        pool_.log(log_level::warning, "budget: cannot use " + cfg_.schema + ".respool_budget: " + reason +
                                          "; keeping max " + std::to_string(configured_max_));
    }
}

void budget_member::on_read_only_server() {
    // A standby cannot write the table, and its connections are not the primary's to share: the pool
    // keeps its configured max. Each heartbeat tries again, so that a promoted standby's pool joins
    // within one heartbeat of the promotion (pg::cluster gives every host's pool the same budget).
    table_ready_ = false;
    apply_cap(configured_max_);
    const std::string reason = "the server is read-only (a standby): its connections are not in the budget";
    {
        std::lock_guard lock(mutex_);
        stats_.degraded = reason;
    }
    if (reason != last_note_) {
        last_note_ = reason;
        pool_.log(log_level::info, "budget: " + reason + "; keeping max " + std::to_string(configured_max_));
    }
}

void budget_member::waiting(const std::string& reason) {
    {
        std::lock_guard lock(mutex_);
        stats_.degraded.clear();
    }
    if (reason != last_note_) {
        last_note_ = reason;
        pool_.log(log_level::info, "budget: waiting for a connection slot: " + reason);
    }
}

asio::awaitable<void> budget_member::run(std::shared_ptr<budget_member> /*keeps it alive*/) {
    const auto sample_every = std::min<clock::duration>(std::chrono::milliseconds(25), cfg_.heartbeat / 4);
    clock::time_point next_tick = clock::now();
    while (!stopping_ && !vanished_) {
        const pool_stats ps = pool_.stats();
        recent_totals_[recent_at_++ % recent_totals_.size()] = ps.total;
        peak_busy_ = std::max<std::size_t>(
            peak_busy_, ps.active + ps.waiting - std::min<std::size_t>(ps.active, gate_waiters_.load()));
        const clock::time_point now = clock::now();
        // News does not wait for the heartbeat: a demand that grew past what the table says (the
        // others must make room), or another member's notification (one joined or asked for more, one
        // gave connections back or left). At most one tick per min_gap.
        const bool demand_grew =
            table_ready_ && budget::demand_of(peak_busy_, configured_max_) > written_demand_;
        const auto min_gap = std::max<clock::duration>(cfg_.heartbeat / 20, std::chrono::milliseconds(10));
        if (now >= next_tick || ((demand_grew || poked_) && now >= last_tick_ + min_gap)) {
            last_tick_ = now;
            poked_ = false;
            co_await tick();
            // While some member's share (its own included) is on its way to its target (a shrink
            // waiting for leases to come back, a grow waiting for others to shrink) it looks again
            // sooner: a change settles in a heartbeat or so, not in several.
            const budget_stats st = stats();
            const bool moving = st.degraded.empty() && !settled_;
            next_tick = clock::now() + (moving ? cfg_.heartbeat / 8 : cfg_.heartbeat);
            const pool_stats ps_now = pool_.stats();
            peak_busy_ = ps_now.active + ps_now.waiting;
            continue;
        }
        co_await pause(std::min<clock::duration>(sample_every, next_tick - clock::now()));
    }
    if (vanished_) {
        if (conn_) conn_->close();
        conn_.reset();
        leave_keepalive_.reset();
        left_ = true;
        co_return;
    }
    co_await finish(std::move(leave_keepalive_));
    left_ = true;
}

asio::awaitable<void> budget_member::wait_left() {
    // Bounded by run(): finish() waits at most lease for the connections, then one DELETE under the
    // member connection's statement deadline. Looked at every 10 ms: a close is rare.
    asio::steady_timer t(co_await asio::this_coro::executor);
    while (!left_) {
        t.expires_after(std::chrono::milliseconds(10));
        co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

asio::awaitable<void> budget_member::pause(clock::duration d) {
    timer_.expires_after(d);
    if (!listening_ || !conn_ || !conn_->is_open()) {
        co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
        co_return;
    }
    // The timer or a notification, whichever comes first (the other is cancelled; leave() and
    // vanish() cancel the timer). Named locals: GCC 12 mishandles temporaries in co_await's operand.
    using namespace asio::experimental::awaitable_operators;
    auto note = conn_->async_wait_notification(asio::as_tuple(asio::use_awaitable));
    auto time = timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    auto either = std::move(note) || std::move(time);
    auto first = co_await std::move(either);
    if (first.index() != 0) co_return;
    auto& [ec, n] = std::get<0>(first);
    if (ec) {
        if (ec != asio::error::operation_aborted) listening_ = false;  // the next tick reconnects
        co_return;
    }
    if (n.payload != cfg_.instance_id) poked_ = true;  // its own come back too
}

asio::awaitable<bool> budget_member::ensure_connection() {
    if (conn_ && conn_->is_open()) co_return true;
    conn_.emplace(ex_);
    listening_ = false;
    auto [ec] = co_await conn_->async_connect(member_conninfo(conninfo_), connect_timeout_,
                                              asio::as_tuple(asio::use_awaitable));
    if (ec) {
        const diagnostics d = conn_->last_error();
        conn_.reset();
        if (d.sqlstate == "53300")  // the server is full: this member waits for room like its pool
            waiting(describe(ec, d));
        else
            degrade("cannot connect: " + describe(ec, d));
        co_return false;
    }
    const auto limit = std::chrono::duration_cast<duration>(cfg_.heartbeat) + std::chrono::seconds(1);
    conn_->set_statement_timeout(limit);
    conn_->set_cancel_drain_limit(limit);
    conn_->set_statement_mode(statement_mode::unnamed, 0);
    // Members tell each other about changes on this channel (best effort: behind a transaction
    // pooler nothing arrives, and the heartbeat alone moves the shares).
    std::string listen = "LISTEN " + channel();
    auto [lec, lr] = co_await conn_->async_query(std::move(listen), asio::as_tuple(asio::use_awaitable));
    listening_ = !lec;
    co_return true;
}

asio::awaitable<void> budget_member::tick() {
    if (!co_await ensure_connection()) co_return;
    connection& c = *conn_;
    const std::uint32_t demand = budget::demand_of(peak_busy_, configured_max_);
    bool read_only = false;  // 25006: a standby (or a server whose transactions are read-only)
    auto failed = [&](const error_code& ec, const std::string& step) {
        read_only = read_only || c.last_error().sqlstate == "25006";
        std::string why = step + ": " + describe(ec, c.last_error());
        if (!c.is_open() || ec == condition::connection_broken) conn_.reset();
        return why;
    };
    auto rollback = [&]() -> asio::awaitable<void> {
        if (conn_ && conn_->is_open() && conn_->transaction_state() != transaction_status::idle) {
            auto [ec, r] = co_await conn_->async_query("ROLLBACK", asio::as_tuple(asio::use_awaitable));
            if (ec) conn_.reset();
        }
    };
    if (!table_ready_) {
        // CREATE ... IF NOT EXISTS needs CREATE on the schema even when the table exists: look first.
        auto [ec, r] = co_await c.async_query("SELECT to_regclass('" + table() + "') IS NOT NULL",
                                              asio::as_tuple(asio::use_awaitable));
        if (ec) co_return degrade(failed(ec, "reading the catalog"));
        if (r.text(0, 0) != "t") {
            // Under the members' lock: two members creating it at once would collide in the catalog.
            auto [cec, cr] = co_await c.async_query(
                "BEGIN; SELECT pg_advisory_xact_lock(" + std::to_string(lock_key_) +
                    "); CREATE TABLE IF NOT EXISTS " + table() +
                    " (instance uuid PRIMARY KEY, service text NOT NULL, host text NOT NULL, pid int NOT "
                    "NULL,"
                    " demand int NOT NULL, granted int NOT NULL, expires_at timestamptz NOT NULL)",
                asio::as_tuple(asio::use_awaitable));
            error_code ec2 = cec;
            if (!ec2) {
                auto [uec, ur] = co_await c.async_query("COMMIT", asio::as_tuple(asio::use_awaitable));
                ec2 = uec;
            }
            if (ec2) {
                const std::string why = failed(ec2, "creating the table");
                co_await rollback();
                if (read_only) co_return on_read_only_server();
                co_return degrade(why);
            }
        }
        table_ready_ = true;
    }

    std::string why;
    {
        auto [ec, r] =
            co_await c.async_query("BEGIN; SELECT pg_advisory_xact_lock(" + std::to_string(lock_key_) +
                                       "); DELETE FROM " + table() + " WHERE expires_at < now()",
                                   asio::as_tuple(asio::use_awaitable));
        if (ec) why = failed(ec, "expiring rows");
    }
    if (why.empty()) {
        in_table_ = true;
        auto [ec, r] = co_await c.async_query(
            "INSERT INTO " + table() +
                " (instance, service, host, pid, demand, granted, expires_at)"
                " VALUES ($1::uuid, $2, $3, $4, $5, 0, now() + $6 * interval '1 millisecond')"
                " ON CONFLICT (instance) DO UPDATE SET demand = excluded.demand, expires_at = "
                "excluded.expires_at",
            params(std::string_view(cfg_.instance_id), std::string_view(program_name()),
                   std::string_view(host_name()), static_cast<std::int32_t>(getpid()),
                   static_cast<std::int32_t>(demand), static_cast<std::int32_t>(cfg_.lease.count())),
            asio::as_tuple(asio::use_awaitable));
        if (ec) why = failed(ec, "writing its row");
    }
    std::vector<budget::member_row> rows;
    std::uint32_t b = 0;
    std::size_t own = 0;
    if (why.empty()) {
        auto [ec, r] = co_await c.async_query(
            "SELECT instance::text, demand, granted, current_setting('max_connections')::int,"
            " current_setting('superuser_reserved_connections')::int,"
            " coalesce(current_setting('reserved_connections', true)::int, 0),"
            " (SELECT rolconnlimit FROM pg_roles WHERE rolname = current_user) FROM " +
                table() + " ORDER BY instance",
            asio::as_tuple(asio::use_awaitable));
        if (ec)
            why = failed(ec, "reading the rows");
        else if (r.rows() == 0)
            why = "its own row is missing after writing it";
        else {
            b = budget::budget_of(number(r, 0, 3, 0), number(r, 0, 4, 0), number(r, 0, 5, 0),
                                  static_cast<std::int64_t>(cfg_.reserve), number(r, 0, 6, -1));
            for (std::size_t i = 0; i < r.rows(); ++i) {
                budget::member_row m;
                m.instance = std::string(r.text(i, 0));
                m.demand = static_cast<std::uint32_t>(std::max<std::int64_t>(1, number(r, i, 1, 1)));
                m.granted = static_cast<std::uint32_t>(std::max<std::int64_t>(0, number(r, i, 2, 0)));
                if (m.instance == cfg_.instance_id) own = i;
                rows.push_back(std::move(m));
            }
        }
    }
    budget::own_step step;
    if (why.empty()) {
        // A connection closed a moment ago may still have its backend on the server (it ends
        // asynchronously): it counts until a few samples later.
        std::size_t total = pool_.stats().total;
        for (std::size_t t : recent_totals_) total = std::max(total, t);
        const std::size_t gated = gate_waiters_.load();
        step = budget::next_step(b, rows, own, total > gated ? total - gated : 0);
        step.pool_cap = std::min(step.pool_cap, configured_max_);
        if (step.pool_cap < cap_) apply_cap(step.pool_cap);  // lower now, before the row says so
        // News for the others (delivered at commit): it joined or asks for more (they must make
        // room), or it gave connections back (room for those waiting to grow).
        const bool news =
            written_demand_ == 0 || demand > written_demand_ || step.granted < rows[own].granted;
        // (A named local: GCC 12 destroys some temporaries of a co_await's arguments twice.)
        std::string sql = "UPDATE " + table() + " SET granted = " + std::to_string(step.granted) +
                          " WHERE instance = '" + cfg_.instance_id + "'; ";
        if (news) sql += notify() + "; ";
        sql += "COMMIT";
        auto [ec, r] = co_await c.async_query(std::move(sql), asio::as_tuple(asio::use_awaitable));
        if (ec) why = failed(ec, "writing its share");
    }
    if (!why.empty()) {
        co_await rollback();
        if (read_only) co_return on_read_only_server();
        co_return degrade(why);
    }
    last_commit_ = clock::now();
    written_demand_ = demand;
    settled_ = step.settled;
    apply_cap(step.pool_cap);  // raised only once the larger share is committed
    if (!last_note_.empty()) {
        pool_.log(log_level::info, "budget: sharing " + cfg_.schema + ".respool_budget");
        last_note_.clear();
    }
    std::lock_guard lock(mutex_);
    stats_.degraded.clear();
    stats_.budget = b;
    stats_.members = static_cast<std::uint32_t>(rows.size());
    stats_.granted = step.granted;
    stats_.target = step.target;
    stats_.demand = demand;
    ++stats_.ticks;
}

asio::awaitable<void> budget_member::finish(std::shared_ptr<void> keepalive) {
    // The row goes only once the pool's connections are gone (leases still out keep theirs until they
    // return them): deleting it earlier would let the others take slots still in use.
    const clock::time_point deadline = clock::now() + cfg_.lease;
    while (pool_.stats().total > 0 && clock::now() < deadline) {
        timer_.expires_after(std::chrono::milliseconds(20));
        co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    // The backends of the connections just closed end asynchronously on the server.
    timer_.expires_after(std::chrono::milliseconds(50));
    co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    if (in_table_ && conn_ && conn_->is_open() && pool_.stats().total == 0) {
        std::string sql =
            "DELETE FROM " + table() + " WHERE instance = '" + cfg_.instance_id + "'; " + notify();
        auto [ec, r] = co_await conn_->async_query(std::move(sql), asio::as_tuple(asio::use_awaitable));
        (void)ec;  // else it expires after lease
    }
    if (conn_) conn_->close();
    conn_.reset();
    keepalive.reset();
}

}  // namespace respool::pg::detail
