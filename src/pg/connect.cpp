// respool::pg::connection's connect: the host names resolved with Asio (libpq's own lookup would block
// the event loop) and passed as hostaddr, then PQconnectPoll step by step, each step an Asio wait on
// libpq's socket (re-registered after every step: libpq may open a new socket per host or TLS attempt,
// and a reused fd number would leave a stale epoll registration), all of it under one deadline.
#include "connect_targets.hpp"
#include "connection_impl.hpp"

#include <algorithm>

namespace asio = boost::asio;

namespace respool::pg {

using detail::complete;
using detail::connect_handler;

namespace {

bool is_ip_literal(const std::string& host) {
    boost::system::error_code ec;
    (void)asio::ip::make_address(host, ec);
    return !ec;
}

// The connect state machine: resolve the host names, then PQconnectPoll until OK or FAILED, each step
// waiting for what libpq asked for, all of it bounded by one deadline.
// (Handlers are moved in at construction: Boost 1.81's any_completion_handler move-assignment recurses.)
struct connect_op : std::enable_shared_from_this<connect_op> {
    connect_op(std::shared_ptr<connection::impl> i, connect_handler h)
        : c(std::move(i)), handler(std::move(h)) {}
    std::shared_ptr<connection::impl> c;
    connect_handler handler;
    std::vector<std::string> keys, values;        // libpq's parsed options (+ hostaddr)
    std::vector<std::string> hosts;               // to resolve, in order
    std::vector<std::vector<std::string>> addrs;  // each host's addresses, in the resolver's order
    std::string port = "5432";                    // the first host's, for the resolver (which needs one)
    std::string ports;                            // the port option as given (one per host, maybe)
    bool done = false;

    void fail(error_code ec, std::string message) {
        if (done) return;
        done = true;
        c->timer.cancel();
        c->client_error(std::move(message));
        c->finish();
        c->op_ended();
        release_slot();
        complete(c->ex, std::move(handler), ec);
    }
    void succeed() {
        done = true;
        c->timer.cancel();
        c->diag = {};
        c->snapshot_session();
        c->at_connect = c->session.reported;
        c->op_ended();
        release_slot();
        complete(c->ex, std::move(handler), error_code{});
    }
    void release_slot() {
        auto slot = handler.get_cancellation_slot();
        if (slot.is_connected()) slot.clear();
    }

    void resolve_next() {
        if (addrs.size() == hosts.size()) return start();
        const std::string& h = hosts[addrs.size()];
        if (h.empty() || h[0] == '/' ||
            is_ip_literal(h)) {  // a socket folder or an address: nothing to resolve
            addrs.push_back({h[0] == '/' ? std::string() : h});
            return resolve_next();
        }
        c->resolver.async_resolve(
            h, port, [self = shared_from_this()](boost::system::error_code ec, auto results) {
                if (self->done) return;
                if (ec || results.empty())
                    return self->fail(error::connect_failed, "could not resolve host \"" +
                                                                 self->hosts[self->addrs.size()] +
                                                                 "\": " + ec.message());
                std::vector<std::string> all;
                for (const auto& e : results) {
                    std::string a = e.endpoint().address().to_string();
                    if (std::find(all.begin(), all.end(), a) == all.end()) all.push_back(std::move(a));
                }
                self->addrs.push_back(std::move(all));
                self->resolve_next();
            });
    }

    void start() {
        if (!hosts.empty()) {
            const detail::libpq_targets t = detail::targets_of(hosts, addrs, ports);
            for (std::size_t i = 0; i < keys.size(); ++i) {
                if (keys[i] == "host") values[i] = t.host;
                if (keys[i] == "port") values[i] = t.port;
            }
            keys.emplace_back("hostaddr");
            values.push_back(t.hostaddr);
        }
        std::vector<const char*> k, v;
        for (std::size_t i = 0; i < keys.size(); ++i) {
            k.push_back(keys[i].c_str());
            v.push_back(values[i].c_str());
        }
        k.push_back(nullptr);
        v.push_back(nullptr);
        c->conn = PQconnectStartParams(k.data(), v.data(), 0);
        if (!c->conn) return fail(error::connect_failed, "out of memory");
        if (PQstatus(c->conn) == CONNECTION_BAD) return fail(error::connect_failed, PQerrorMessage(c->conn));
        c->listen_for_fatal();
        step(PGRES_POLLING_WRITING);
    }

    void step(PostgresPollingStatusType st) {
        if (done) return;
        if (c->timed_out) return fail(error::connect_timeout, "connect timed out");
        if (st == PGRES_POLLING_OK) {
            if (PQsetnonblocking(c->conn, 1) != 0 || !c->watch())
                return fail(error::connection_broken, PQerrorMessage(c->conn));
            return succeed();
        }
        if (st == PGRES_POLLING_FAILED) {
            const std::string message = PQerrorMessage(c->conn);
            const bool auth = PQconnectionNeedsPassword(c->conn) || PQconnectionUsedPassword(c->conn) ||
                              message.find("authentication failed") != std::string::npos;
            return fail(auth && message.find("authentication") != std::string::npos
                            ? error::authentication_failed
                            : error::connect_failed,
                        message);
        }
        if (!c->watch()) return fail(error::connect_failed, "libpq has no socket");
        c->sock.async_wait(
            st == PGRES_POLLING_READING ? asio::socket_base::wait_read : asio::socket_base::wait_write,
            [self = shared_from_this()](boost::system::error_code ec) {
                if (self->done) return;
                if (self->c->timed_out) return self->step(PGRES_POLLING_FAILED);
                if (ec) return self->fail(error::connect_failed, ec.message());
                self->step(PQconnectPoll(self->c->conn));
            });
    }
};

}  // namespace

void connection::start_connect(std::string conninfo, std::chrono::steady_clock::duration timeout,
                               connect_handler handler) {
    auto& c = *impl_;
    c.info = masked(conninfo);
    if (c.busy) return complete(c.ex, std::move(handler), error_code(error::busy));
    c.finish();
    c.cache.clear();  // a new session: nothing of the old one's statements or state exists there
    c.to_deallocate.clear();
    c.notifications.clear();
    c.session = {};
    c.server_fatal = false;
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
    if (!opts) {
        c.client_error(err ? err : "out of memory");
        if (err) PQfreemem(err);
        return complete(c.ex, std::move(handler), error_code(error::bad_connection_string));
    }
    auto op = std::make_shared<connect_op>(impl_, std::move(handler));
    std::string host;
    bool has_hostaddr = false;
    for (PQconninfoOption* o = opts; o->keyword; ++o) {
        if (!o->val) continue;
        const std::string k = o->keyword;
        if (k == "host") host = o->val;
        if (k == "hostaddr") has_hostaddr = true;
        if (k == "port") op->port = op->ports = o->val;
        op->keys.push_back(k);
        op->values.emplace_back(o->val);
    }
    PQconninfoFree(opts);
    if (!host.empty() && !has_hostaddr) {  // resolve here, asynchronously; libpq would block the loop
        for (std::size_t b = 0;;) {
            const auto e = host.find(',', b);
            op->hosts.push_back(host.substr(b, e == std::string::npos ? std::string::npos : e - b));
            if (e == std::string::npos) break;
            b = e + 1;
        }
        if (op->port.find(',') != std::string::npos) op->port = op->port.substr(0, op->port.find(','));
        if (op->port.empty()) op->port = "5432";  // only the addresses are used
    }
    c.busy = true;
    c.timed_out = false;
    auto slot = op->handler.get_cancellation_slot();
    if (slot.is_connected())  // a pool's create_timeout or close(): end the connect now
        slot.assign([weak = std::weak_ptr<connect_op>(op)](asio::cancellation_type) {
            if (auto o = weak.lock(); o && !o->done)
                o->fail(asio::error::operation_aborted, "connect cancelled");
        });
    c.timer.expires_after(timeout);
    c.timer.async_wait([weak = std::weak_ptr<connect_op>(op)](boost::system::error_code ec) {
        auto self = weak.lock();
        if (ec || !self || self->done) return;
        self->c->timed_out = true;  // the pending wait or resolution ends now and sees it
        self->c->resolver.cancel();
        boost::system::error_code ignored;
        self->c->sock.cancel(ignored);
        if (!self->c->conn) self->fail(error::connect_timeout, "connect timed out (resolving)");
    });
    asio::post(c.ex, [op] { op->resolve_next(); });  // never inside the initiating call
}

}  // namespace respool::pg
