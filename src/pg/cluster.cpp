// respool::pg::cluster: the Asio driver around the sans-io topology (topology.hpp). It owns one pg::pool
// per host and one monitor connection per host, feeds the topology what it observes (probe readings
// and failures, the ParameterStatus of every returned lease, errors of the statements it runs), acts on
// what changed (a log callback, the connections of a host that stopped being primary retired) and
// routes each operation: to a host at once, or into the wait for one (the core's request queue, up to
// failover_wait) while none fits.
//
// Everything runs on the cluster's executor (the pools' too); operations started from elsewhere are
// dispatched there first.
#include <respool/pg/cluster.hpp>

#include "cluster_hosts.hpp"
#include "pool_access.hpp"
#include "probe.hpp"
#include "topology.hpp"

#include <respool/detail/request_queue.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <list>
#include <random>
#include <stdexcept>

namespace asio = boost::asio;

namespace respool::pg {

namespace detail {

namespace {

using clock = std::chrono::steady_clock;

// Where the wait for a host continues: the chosen host, or why none came.
using host_handler = asio::any_completion_handler<void(error_code, std::size_t)>;

// An operation waiting for a host its route accepts (a write for a primary, a read for a standby).
// (Handlers are moved in at construction: Boost 1.81's any_completion_handler move-assignment recurses.)
struct waiting_op : respool::detail::request_node {
    using owner_type = cluster_state;
    waiting_op(std::optional<read_options> r, std::vector<bool> x, host_handler h, respool::diagnostics* d)
        : route(r), exclude(std::move(x)), handler(std::move(h)), diag(d) {}
    std::optional<read_options> route;
    std::vector<bool> exclude;  // hosts this operation already failed to borrow from
    host_handler handler;
    respool::diagnostics* diag = nullptr;
    static void on_cancel(cluster_state& s, const std::shared_ptr<waiting_op>& op, bool withdrawn);
};

[[noreturn]] void bad_config(const std::string& what) {
    throw std::invalid_argument("respool::pg::cluster: " + what);
}

// A failure of an acquire that says the host itself is gone or refuses new connections (nothing was
// sent): the operation looks for another host, never this one again.
bool host_failure(const error_code& ec) {
    return ec == condition::connection_broken || ec == respool::errc::unavailable ||
           ec == error::authentication_failed;
}

}  // namespace

// An operation that waits for a connection of a host's pool and can be sent elsewhere.
struct redirectable {
    virtual ~redirectable() = default;
    virtual void redirect_if_unfit() = 0;
};

struct cluster_host_slot {
    std::string name;
    std::optional<pool> db;
    std::optional<connection> monitor;
    std::optional<asio::steady_timer> timer;  // the monitor's wait for its next probe
    asio::cancellation_signal stop;           // ends a probe under way at close
    bool probed = false;                      // one probe has ended (either way)
    std::uint64_t role_changes = 0;
    std::uint64_t statements = 0;
    clock::time_point timer_at = clock::time_point::max();
    // The topology's view of the host as of the last update (cheap to read on every lease's return).
    host_role role = host_role::unknown;
    bool writable = false;
    clock::time_point role_since{};
    // Operations waiting for a connection of this host's pool: redirected when the host stops fitting
    // their route (a write on a primary that was demoted or fenced meanwhile).
    std::list<std::weak_ptr<redirectable>> acquiring;
};

struct cluster_state : std::enable_shared_from_this<cluster_state> {
    cluster_state(asio::any_io_executor e, cluster_config c, std::vector<std::string> names)
        : ex(std::move(e)),
          cfg(std::move(c)),
          topo(std::move(names),
               topology::settings{cfg.topology_interval, cfg.no_primary_interval, cfg.max_replica_lag}),
          wait_timer(ex),
          rng(std::random_device{}()) {}

    asio::any_io_executor ex;
    cluster_config cfg;
    topology topo;
    std::vector<std::unique_ptr<cluster_host_slot>> hosts;
    respool::detail::request_queue<waiting_op> waiting;
    asio::steady_timer wait_timer;
    std::optional<clock::time_point> wait_timer_at;
    std::minstd_rand rng;
    bool closed = false;
    bool update_posted = false;
    std::vector<asio::any_completion_handler<void(error_code)>> ready_waiters;
    std::uint64_t failover_waits = 0, failover_timeouts = 0, reads_to_standby = 0, reads_to_primary = 0;

    // ---- routing ----
    std::optional<std::size_t> pick(const std::optional<read_options>& r, const std::vector<bool>& exclude) {
        std::optional<std::size_t> host;
        if (!r || r->to == route::primary) {
            host = topo.primary();
        } else {
            std::vector<std::size_t> load(hosts.size());
            for (std::size_t i = 0; i < hosts.size(); ++i) {
                const pool_stats st = hosts[i]->db->stats();
                // A host this operation failed on counts as the busiest: another qualifying one wins.
                load[i] = i < exclude.size() && exclude[i] ? std::size_t(-1) : st.active + st.waiting;
            }
            host = topo.pick(r->to, clock::now(), r->after.lsn, load, static_cast<std::uint32_t>(rng()));
        }
        if (host && *host < exclude.size() && exclude[*host]) return std::nullopt;
        return host;
    }

    void count_route(const std::optional<read_options>& r, std::size_t host) {
        ++hosts[host]->statements;
        if (!r) return;
        if (hosts[host]->role == host_role::primary)
            ++reads_to_primary;
        else
            ++reads_to_standby;
    }

    std::string why_none(const std::optional<read_options>& r) const {
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(cfg.failover_wait).count();
        if (!r || r->to == route::primary)
            return "no primary within failover_wait (" + std::to_string(wait) +
                   " ms): " + topo.no_primary_reason();
        return "no standby within max_replica_lag (" +
               std::to_string(
                   std::chrono::duration_cast<std::chrono::milliseconds>(cfg.max_replica_lag).count()) +
               " ms)" + (r->after ? " that has replayed " + to_string(r->after) : std::string()) +
               " within " + std::to_string(wait) + " ms";
    }

    // Finds a host for `r` now (none in `exclude`), or queues the operation until one fits or
    // `deadline` (the operation's arrival + failover_wait) has passed: then errc::unavailable.
    void with_host(std::optional<read_options> r, clock::time_point deadline, std::vector<bool> exclude,
                   respool::diagnostics* diag, host_handler h) {
        if (closed) return complete(std::move(h), respool::errc::closed, 0);
        if (auto host = pick(r, exclude)) {
            count_route(r, *host);
            return complete(std::move(h), {}, *host);
        }
        const clock::time_point now = clock::now();
        auto slot = h.get_cancellation_slot();
        auto op = std::make_shared<waiting_op>(r, std::move(exclude), std::move(h), diag);
        if (!r || r->to == route::primary) ++failover_waits;
        if (auto ec = waiting.push(op, now, deadline > now ? deadline - now : clock::duration::zero())) {
            auto handler = std::move(op->handler);
            return complete(std::move(handler), ec, 0);
        }
        if (slot.is_connected())
            slot.assign(respool::detail::request_canceller<waiting_op>{weak_from_this(), &waiting, op});
        arm_wait_timer();
        wake_monitors();  // no primary: the monitors' period is the short one from now on
    }

    // Completes a wait for a host on the handler's executor (the cluster's by default), never inline.
    void complete(host_handler h, error_code ec, std::size_t host) {
        asio::post(ex, asio::append(std::move(h), ec, host));
    }

    // Whether `host`, picked for `r`, still fits it (the topology may have changed while the operation
    // waited for a connection there): a write only on the primary, a read never on a fenced or down host.
    bool fits(const std::optional<read_options>& r, std::size_t host) const {
        if (!r || r->to == route::primary) return topo.primary() == host;
        const host_role role = hosts[host]->role;
        return role == host_role::primary || role == host_role::standby;
    }

    void arm_wait_timer() {
        const auto next = waiting.next_deadline();
        if (!next || (wait_timer_at && *wait_timer_at <= *next)) return;
        wait_timer_at = *next;
        wait_timer.expires_at(*next);
        wait_timer.async_wait([w = weak_from_this()](error_code ec) {
            auto s = w.lock();
            if (!s || ec == asio::error::operation_aborted) return;
            s->wait_timer_at.reset();
            s->expire_waiting();
        });
    }

    void expire_waiting() {
        waiting.expire(clock::now(), [this](std::shared_ptr<waiting_op> op, error_code) {
            if (!op->route || op->route->to == route::primary) ++failover_timeouts;
            if (op->diag) {
                std::string why = why_none(op->route);
                if (!op->diag->message.empty())  // what the last attempt on a host said
                    why += "; the last attempt: " + op->diag->message;
                op->diag->message = std::move(why);
            }
            op->handler.get_cancellation_slot().clear();
            complete(std::move(op->handler), respool::errc::unavailable, 0);
        });
        arm_wait_timer();
    }

    void serve_waiting() {
        if (waiting.empty()) return;
        std::vector<std::shared_ptr<waiting_op>> all;
        waiting.take(waiting.size(), all);
        for (auto& op : all) {
            if (auto host = pick(op->route, op->exclude)) {
                count_route(op->route, *host);
                op->handler.get_cancellation_slot().clear();
                complete(std::move(op->handler), {}, *host);
            } else {
                waiting.requeue(op);
            }
        }
    }

    // ---- what the topology hears ----
    // After every input: act on the changes, serve the waiting, re-arm the monitors.
    void update() {
        for (role_change& c : topo.take_changes()) {
            auto& h = *hosts[c.host];
            ++h.role_changes;
            if (c.from == host_role::primary && c.to != host_role::primary) h.db->retire_all();
            if (c.to == host_role::fenced) h.db->retire_all();
            if (c.from == host_role::down && (c.to == host_role::primary || c.to == host_role::standby)) {
                // The monitor reached it: its pool stops backing off its connects (and its circuit,
                // opened while the host was down, closes), so a host promoted right after it came
                // back serves at once rather than after the pool's next retry.
                h.db->base().retry_now();
                if (h.db->state() != circuit_state::closed) h.db->base().breaker().activate();
            }
            if (cfg.on_role_change) cfg.on_role_change(h.name, c.from, c.to, c.reason);
        }
        for (std::size_t i = 0; i < hosts.size(); ++i) {
            const host_view v = topo.view(i);
            hosts[i]->role = v.role;
            hosts[i]->writable = v.writable;
            hosts[i]->role_since = v.role_since;
        }
        // Operations waiting for a connection of a host that no longer fits them go elsewhere.
        for (auto& h : hosts) {
            for (auto it = h->acquiring.begin(); it != h->acquiring.end();) {
                if (auto op = it->lock()) {
                    op->redirect_if_unfit();
                    ++it;
                } else {
                    it = h->acquiring.erase(it);
                }
            }
        }
        serve_waiting();
        wake_monitors();
    }
    // From inside a pool's release (the return observer): later, on the executor, once.
    void post_update() {
        if (update_posted) return;
        update_posted = true;
        asio::post(ex, [w = weak_from_this()] {
            if (auto s = w.lock()) {
                s->update_posted = false;
                if (!s->closed) s->update();
            }
        });
    }

    void on_return(std::size_t host, connection& c) {
        const cluster_host_slot& v = *hosts[host];
        // A session the server has not answered since the host took its role reports what it was
        // before (an idle connection of a standby just promoted still says in_hot_standby=on): old news.
        if (c.last_reply() < v.role_since) return;
        // Only in_hot_standby is believed here: default_transaction_read_only also changes with a
        // session's own SET (the probe reads the server's setting), and a write refused with 25006 on
        // a server that says it is read-only is failover_detected().
        const std::string_view hs = c.parameter_status("in_hot_standby");
        const bool hot_standby = hs == "on";
        // Only what differs from what the topology believes is news (one lookup per lease, no more).
        const bool news = (v.role == host_role::primary && hot_standby && v.writable) ||
                          (v.role == host_role::standby && !hot_standby && !hs.empty()) ||
                          (c.failover_detected() && v.writable);
        if (!news) return;
        if (c.failover_detected())
            topo.write_refused(host, clock::now());
        else
            topo.session_reported(host, hot_standby, false, clock::now());
        post_update();
    }

    void statement_failed(std::size_t host, const error_code& ec) {
        if (closed) return;
        if (ec == condition::read_only)
            topo.write_refused(host, clock::now());
        else if (ec == condition::connection_broken)   // not an open circuit or a refused login: the
            topo.connection_lost(host, clock::now());  // monitor's own session tells those apart
        else
            return;
        update();
    }

    // ---- monitors ----
    void wake_monitors() {
        for (std::size_t i = 0; i < hosts.size(); ++i) {
            auto& h = *hosts[i];
            if (h.timer && next_wake(i) < h.timer_at) h.timer->cancel();
        }
    }

    // When host i's monitor should act next: its probe, or (no primary known, the host a standby with
    // a monitor connection) an empty statement sooner, which makes a promoted server push
    // in_hot_standby=off at once.
    clock::time_point next_wake(std::size_t i) const {
        clock::time_point t = topo.next_probe(i);
        const auto& h = *hosts[i];
        if (!topo.primary() && h.monitor && h.monitor->is_open() && topo.view(i).role == host_role::standby) {
            const clock::time_point watch = clock::now() + cfg.no_primary_interval / 4;
            if (watch < t) t = watch;
        }
        return t;
    }

    static asio::awaitable<void> monitor_loop(std::shared_ptr<cluster_state> s, std::size_t i) {
        auto& h = *s->hosts[i];
        const std::string conninfo = h.db->config().conninfo;
        auto stop_slot = h.stop.slot();
        while (!s->closed) {
            const clock::time_point wake = s->next_wake(i);
            if (wake > clock::now()) {
                h.timer_at = wake;
                h.timer->expires_at(wake);
                co_await h.timer->async_wait(asio::as_tuple(asio::use_awaitable));
                h.timer_at = clock::time_point::max();
                continue;  // woken early (a change) or due: look again
            }
            if (s->closed) break;
            const bool full_probe = s->topo.next_probe(i) <= clock::now();
            const clock::time_point sent = clock::now();
            if (!h.monitor || !h.monitor->is_open()) {
                h.monitor.emplace(s->ex);
                auto [ec] = co_await h.monitor->async_connect(
                    conninfo, s->cfg.probe_timeout,
                    asio::bind_cancellation_slot(stop_slot, asio::as_tuple(asio::use_awaitable)));
                if (s->closed) break;
                if (ec) {
                    s->probe_failed(i, sent, describe(ec, h.monitor->last_error()));
                    h.monitor.reset();
                    continue;
                }
                h.monitor->set_statement_timeout(s->cfg.probe_timeout);
                h.monitor->set_cancel_drain_limit(s->cfg.probe_timeout);
                h.monitor->set_statement_mode(statement_mode::unnamed, 0);
            }
            if (!full_probe) {  // the watch for a promotion: an empty statement
                auto [ec] = co_await h.monitor->async_ping(
                    asio::bind_cancellation_slot(stop_slot, asio::as_tuple(asio::use_awaitable)));
                if (s->closed) break;
                if (ec) {
                    s->probe_failed(i, sent, describe(ec, h.monitor->last_error()));
                    h.monitor.reset();
                } else if (h.monitor->parameter_status("in_hot_standby") == "off") {
                    s->topo.session_reported(
                        i, false, h.monitor->parameter_status("default_transaction_read_only") == "on",
                        clock::now());
                    s->update();
                }
                continue;
            }
            auto [ec, r] = co_await h.monitor->async_query(
                probe_sql, asio::bind_cancellation_slot(stop_slot, asio::as_tuple(asio::use_awaitable)));
            if (s->closed) break;
            probe_reading reading;
            reading.sent = sent;
            reading.received = clock::now();
            std::string why;
            if (ec) {
                s->probe_failed(i, sent, describe(ec, h.monitor->last_error()));
                h.monitor.reset();
            } else if (!read_probe(r, reading, why)) {
                s->probe_failed(i, sent, why);
            } else {
                s->topo.probe_succeeded(i, reading);
                s->probe_ended(i);
            }
        }
        if (h.monitor) h.monitor->close();
    }

    void probe_failed(std::size_t i, clock::time_point sent, std::string why) {
        topo.probe_failed(i, sent, masked(why));
        probe_ended(i);
    }

    void probe_ended(std::size_t i) {
        if (!hosts[i]->probed) {
            hosts[i]->probed = true;
            if (std::all_of(hosts.begin(), hosts.end(), [](const auto& h) { return h->probed; }))
                for (auto& w : std::exchange(ready_waiters, {}))
                    asio::post(ex, asio::append(std::move(w), error_code{}));
        }
        update();
    }

    void close() {
        if (closed) return;
        closed = true;
        waiting.fail_all(respool::errc::closed, [this](std::shared_ptr<waiting_op> op, error_code ec) {
            op->handler.get_cancellation_slot().clear();
            complete(std::move(op->handler), ec, 0);
        });
        wait_timer.cancel();
        for (auto& h : hosts) {
            h->stop.emit(asio::cancellation_type::terminal);
            if (h->timer) h->timer->cancel();
            if (h->db) h->db->close();
        }
        for (auto& w : std::exchange(ready_waiters, {}))
            asio::post(ex, asio::append(std::move(w), error_code(respool::errc::closed)));
    }
};

void waiting_op::on_cancel(cluster_state& s, const std::shared_ptr<waiting_op>& op, bool withdrawn) {
    if (!withdrawn) return;  // already on its way to a host: the pool's own cancellation applies there
    op->handler.get_cancellation_slot().clear();
    s.complete(std::move(op->handler), respool::errc::cancelled, 0);
    s.arm_wait_timer();
}

// A lease on the host a route picks: the first half of every cluster operation (pipelined statements
// aside). The search for a host is bounded by one deadline, the operation's arrival + failover_wait. A
// host whose acquire fails at host level (it cannot be connected to, its circuit is open, it refuses
// the login) is not picked again by this operation; a lease that arrives after its host stopped fitting
// the route goes back; an acquire still waiting when its host stops fitting is cancelled and the
// operation goes elsewhere. Completes once: void(error_code, lease<connection>, host).
struct routed_acquire final : redirectable, std::enable_shared_from_this<routed_acquire> {
    using handler_type = asio::any_completion_handler<void(error_code, lease<connection>, std::size_t)>;
    routed_acquire(std::shared_ptr<cluster_state> st, std::optional<read_options> r, respool::diagnostics* d,
                   handler_type h)
        : s(std::move(st)),
          route(r),
          diag(d),
          handler(std::move(h)),
          deadline(clock::now() + s->cfg.failover_wait),
          exclude(s->hosts.size(), false) {}

    std::shared_ptr<cluster_state> s;
    std::optional<read_options> route;
    respool::diagnostics* diag;
    handler_type handler;
    clock::time_point deadline;
    std::vector<bool> exclude;
    std::size_t host = 0;
    asio::cancellation_signal acquire_cancel;  // the pool acquire under way (redirect or caller)
    bool acquiring = false;
    bool redirected = false;

    void start() {
        auto self = shared_from_this();
        auto slot = handler.get_cancellation_slot();
        s->with_host(route, deadline, exclude, diag,
                     asio::bind_cancellation_slot(
                         slot, [self](error_code ec, std::size_t h) { self->on_host(ec, h); }));
    }
    void on_host(error_code ec, std::size_t h) {
        if (ec) return finish(ec, {});
        host = h;
        pool& db = *s->hosts[h]->db;
        acquiring = true;
        redirected = false;
        s->hosts[h]->acquiring.push_back(weak_from_this());
        // The caller's cancellation reaches the acquire through acquire_cancel, which a redirect uses too.
        auto caller = handler.get_cancellation_slot();
        if (caller.is_connected())
            caller.assign([self = weak_from_this()](asio::cancellation_type t) {
                if (auto op = self.lock(); op && op->acquiring) op->acquire_cancel.emit(t);
            });
        auto self = shared_from_this();
        db.async_acquire(
            db.config().borrow_timeout, diag,
            asio::bind_cancellation_slot(acquire_cancel.slot(), [self](error_code aec, lease<connection> l) {
                self->on_lease(aec, std::move(l));
            }));
    }
    void redirect_if_unfit() override {
        if (!acquiring || redirected || s->fits(route, host)) return;
        redirected = true;
        acquire_cancel.emit(asio::cancellation_type::terminal);
    }
    void on_lease(error_code ec, lease<connection> l) {
        acquiring = false;
        handler.get_cancellation_slot().clear();
        auto& list = s->hosts[host]->acquiring;
        list.remove_if([this](const std::weak_ptr<redirectable>& w) { return w.lock().get() == this; });
        if (s->closed) return finish(ec ? ec : error_code(respool::errc::closed), {});
        if (redirected) {  // its host stopped fitting while it waited: elsewhere (a lease goes back)
            if (diag) diag->clear();
            return start();
        }
        if (ec) {
            if (!host_failure(ec)) return finish(ec, {});
            exclude[host] = true;  // nothing was sent: another host, never this one again
            s->statement_failed(host, ec);
            return start();
        }
        if (!s->fits(route, host)) {  // the host changed role while it waited: the lease goes back
            l.release();
            if (diag) diag->clear();
            return start();
        }
        finish({}, std::move(l));
    }
    void finish(error_code ec, lease<connection> l) {
        if (ec && diag && diag->message.empty()) diag->message = ec.message();
        auto h = std::move(handler);
        asio::dispatch(asio::append(std::move(h), ec, std::move(l), host));
    }
};

template <class Token>
auto async_acquire_routed(const std::shared_ptr<cluster_state>& s, std::optional<read_options> r,
                          respool::diagnostics* d, Token&& token) {
    return asio::async_initiate<Token, void(error_code, lease<connection>, std::size_t)>(
        [s](auto handler, std::optional<read_options> ro, respool::diagnostics* dg) {
            auto op = std::make_shared<routed_acquire>(s, ro, dg, std::move(handler));
            asio::dispatch(s->ex, [op] { op->start(); });
        },
        token, r, d);
}

asio::awaitable<std::pair<lease<connection>, std::size_t>> acquire_routed(std::shared_ptr<cluster_state> s,
                                                                          std::optional<read_options> r) {
    respool::diagnostics diag;
    auto [ec, l, host] = co_await async_acquire_routed(s, r, &diag, asio::as_tuple(asio::use_awaitable));
    if (ec) throw boost::system::system_error(ec, diag.message.empty() ? ec.message() : diag.message);
    co_return std::pair{std::move(l), host};
}

void check_still_primary(const std::shared_ptr<cluster_state>& s, std::size_t host) {
    if (s->fits(std::nullopt, host)) return;
    throw boost::system::system_error(respool::errc::unavailable,
                                      s->hosts[host]->name +
                                          " is no longer the primary: the transaction was "
                                          "not run again there");
}

}  // namespace detail

namespace {

using detail::clock;
using detail::cluster_state;

void check(const cluster_config& c) {
    auto positive = [](duration d, const char* name) {
        if (d <= duration::zero()) detail::bad_config(std::string(name) + " must be positive");
    };
    positive(c.topology_interval, "topology_interval");
    positive(c.no_primary_interval, "no_primary_interval");
    positive(c.probe_timeout, "probe_timeout");
    positive(c.max_replica_lag, "max_replica_lag");
    if (c.failover_wait < duration::zero()) detail::bad_config("failover_wait must not be negative");
}

// cluster::async_query: a routed acquire, the statement on the lease, its failure heard by the
// topology. A pipelined statement (pipeline_depth > 1) goes through its host's pool instead, once the
// host is picked (the pool's carriers borrow for it).
struct routed_query : std::enable_shared_from_this<routed_query> {
    routed_query(std::shared_ptr<cluster_state> st, std::optional<read_options> r, std::string q,
                 std::optional<params> pr, respool::diagnostics* d,
                 asio::any_completion_handler<void(error_code, result)> h)
        : s(std::move(st)), route(r), sql(std::move(q)), p(std::move(pr)), diag(d), handler(std::move(h)) {}
    std::shared_ptr<cluster_state> s;
    std::optional<read_options> route;
    std::string sql;
    std::optional<params> p;
    respool::diagnostics* diag = nullptr;
    asio::any_completion_handler<void(error_code, result)> handler;
    std::size_t host = 0;

    void start() {
        auto self = shared_from_this();
        auto slot = handler.get_cancellation_slot();
        if (detail::pool_access::pipelined(*s->hosts.front()->db, sql, p)) {
            const auto deadline = clock::now() + s->cfg.failover_wait;
            return s->with_host(route, deadline, {}, diag,
                                asio::bind_cancellation_slot(
                                    slot, [self](error_code ec, std::size_t h) { self->pipelined(ec, h); }));
        }
        detail::async_acquire_routed(
            s, route, diag,
            asio::bind_cancellation_slot(slot, [self](error_code ec, lease<connection> l, std::size_t h) {
                self->on_lease(ec, std::move(l), h);
            }));
    }
    void pipelined(error_code ec, std::size_t h) {
        if (ec) return finish(ec, {});
        if (!s->fits(route, h)) return start();  // changed while the pick was on its way
        host = h;
        auto self = shared_from_this();
        s->hosts[h]->db->async_query(
            std::move(sql), std::move(*p), diag,
            asio::bind_cancellation_slot(handler.get_cancellation_slot(), [self](error_code qec, result r) {
                self->statement_done(qec, std::move(r));
            }));
    }
    void on_lease(error_code ec, lease<connection> l, std::size_t h) {
        if (ec) return finish(ec, {});
        host = h;
        auto self = shared_from_this();
        auto slot = handler.get_cancellation_slot();
        detail::pool_access::run_query(std::move(l), sql, p, diag,
                                       asio::bind_cancellation_slot(slot, [self](error_code qec, result r) {
                                           self->statement_done(qec, std::move(r));
                                       }));
    }
    void statement_done(error_code ec, result r) {
        if (ec) s->statement_failed(host, ec);
        finish(ec, std::move(r));
    }
    void finish(error_code ec, result r) {
        if (ec && diag && diag->message.empty()) diag->message = ec.message();
        auto h = std::move(handler);
        asio::dispatch(asio::append(std::move(h), ec, std::move(r)));
    }
};

}  // namespace

cluster::cluster(executor_type ex, cluster_config cfg) {
    check(cfg);
    std::vector<detail::cluster_host> split;
    try {
        split = detail::split_hosts(cfg.pool.conninfo);
    } catch (const std::invalid_argument& e) {
        detail::bad_config(e.what());
    }
    std::vector<std::string> names;
    for (const auto& h : split) names.push_back(h.name);
    state_ = std::make_shared<cluster_state>(ex, std::move(cfg), std::move(names));
    auto& s = *state_;
    for (std::size_t i = 0; i < split.size(); ++i) {
        auto slot = std::make_unique<detail::cluster_host_slot>();
        slot->name = split[i].name;
        pool_config pc = s.cfg.pool;
        pc.conninfo = split[i].conninfo;
        slot->db.emplace(detail::pool_access::make(
            ex, std::move(pc), [w = std::weak_ptr<cluster_state>(state_), i](connection& c) {
                if (auto st = w.lock(); st && !st->closed) st->on_return(i, c);
            }));
        slot->timer.emplace(ex);
        s.hosts.push_back(std::move(slot));
    }
    for (std::size_t i = 0; i < s.hosts.size(); ++i)
        asio::co_spawn(ex, cluster_state::monitor_loop(state_, i), asio::detached);
}

cluster::~cluster() {
    close();
}
cluster::cluster(cluster&&) noexcept = default;
cluster& cluster::operator=(cluster&& other) noexcept {
    if (this != &other) {
        close();
        state_ = std::move(other.state_);
    }
    return *this;
}

cluster::executor_type cluster::get_executor() const noexcept {
    return state_->ex;
}
const cluster_config& cluster::config() const noexcept {
    return state_->cfg;
}
std::size_t cluster::hosts() const noexcept {
    return state_->hosts.size();
}
pool& cluster::host_pool(std::size_t host) {
    return *state_->hosts.at(host)->db;
}

void cluster::close() noexcept {
    if (!state_) return;
    if (state_->cfg.pool.thread_safe)  // the executor is a strand: close on it
        return asio::dispatch(state_->ex, [s = state_] { s->close(); });
    state_->close();
}

cluster_stats cluster::stats() const {
    const auto& s = *state_;
    cluster_stats out;
    const auto now = clock::now();
    for (std::size_t i = 0; i < s.hosts.size(); ++i) {
        const auto v = s.topo.view(i);
        cluster_host_stats h;
        h.name = s.hosts[i]->name;
        h.role = v.role;
        h.writable = v.writable;
        h.timeline = v.timeline;
        h.lsn = v.lsn;
        if (v.role == host_role::primary)
            h.lag = duration::zero();
        else if (v.fresh_as_of)
            h.lag =
                std::chrono::duration_cast<duration>(std::max(clock::duration::zero(), now - *v.fresh_as_of));
        h.role_changes = s.hosts[i]->role_changes;
        h.statements = s.hosts[i]->statements;
        h.last_failure = v.last_failure;
        h.pool = s.hosts[i]->db->stats();
        h.budget = s.hosts[i]->db->budget_stats();
        out.hosts.push_back(std::move(h));
    }
    out.primary = s.topo.primary();
    if (!out.primary) out.no_primary_reason = s.topo.no_primary_reason();
    out.waiting_for_primary = s.waiting.size();
    out.failover_waits = s.failover_waits;
    out.failover_timeouts = s.failover_timeouts;
    out.reads_to_standby = s.reads_to_standby;
    out.reads_to_primary = s.reads_to_primary;
    return out;
}

void cluster::start_query(std::string sql, std::optional<params> p, respool::diagnostics* diag,
                          query_handler handler, const asio::any_io_executor& /*handler_ex*/) {
    if (diag) diag->clear();
    auto op = std::make_shared<routed_query>(state_, std::nullopt, std::move(sql), std::move(p), diag,
                                             std::move(handler));
    asio::dispatch(state_->ex, [op] { op->start(); });
}

void cluster::start_routed_query(read_options r, std::string sql, std::optional<params> p,
                                 respool::diagnostics* diag, query_handler handler) {
    if (diag) diag->clear();
    auto op =
        std::make_shared<routed_query>(state_, r, std::move(sql), std::move(p), diag, std::move(handler));
    asio::dispatch(state_->ex, [op] { op->start(); });
}

void cluster::start_acquire(std::optional<read_options> r, acquire_handler handler) {
    auto slot = handler.get_cancellation_slot();
    detail::async_acquire_routed(
        state_, r, nullptr,
        asio::bind_cancellation_slot(
            slot, [h = std::move(handler)](error_code ec, lease<connection> l, std::size_t) mutable {
                asio::dispatch(asio::append(std::move(h), ec, std::move(l)));
            }));
}

void cluster::start_wait_ready(asio::any_completion_handler<void(error_code)> handler) {
    asio::dispatch(state_->ex, [s = state_, h = std::move(handler)]() mutable {
        if (s->closed)
            return asio::post(s->ex, asio::append(std::move(h), error_code(respool::errc::closed)));
        if (std::all_of(s->hosts.begin(), s->hosts.end(), [](const auto& x) { return x->probed; }))
            return asio::post(s->ex, asio::append(std::move(h), error_code{}));
        s->ready_waiters.push_back(std::move(h));
    });
}

}  // namespace respool::pg
