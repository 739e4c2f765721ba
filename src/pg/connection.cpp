// respool::pg::connection over libpq: the connect and query state machines of libpq's asynchronous API
// (docs/06-postgresql.md), each wait an Asio wait on libpq's socket. The socket stays libpq's: Asio
// only watches it (released before libpq closes it, re-registered after every PQconnectPoll step,
// because libpq may open a new socket per host or TLS attempt and a reused fd number would leave a
// stale epoll registration).
#include <respool/pg/connection.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <libpq-fe.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <stdexcept>
#include <thread>

namespace asio = boost::asio;

namespace respool::pg {

// ---- errors ----------------------------------------------------------------------------------

// ---- result ----------------------------------------------------------------------------------

// What PQsendQueryParams takes, pointing into the params (which must outlive the call).
struct params_access {
    const params& p;
    std::vector<const char*> values;
    std::vector<int> lengths;
    explicit params_access(const params& q) : p(q), values(q.size()), lengths(q.size()) {
        for (std::size_t i = 0; i < q.size(); ++i) {
            values[i] = q.nulls_[i] ? nullptr : q.values_[i].data();
            lengths[i] = static_cast<int>(q.values_[i].size());
        }
    }
    [[nodiscard]] const Oid* types() const noexcept { return p.types_.data(); }
    [[nodiscard]] const int* formats() const noexcept { return p.formats_.data(); }
};

struct result_access {
    static result from(const PGresult* r) {
        result out;
        const int n = PQntuples(r), m = PQnfields(r);
        out.rows_ = static_cast<std::size_t>(n);
        for (int c = 0; c < m; ++c) out.names_.emplace_back(PQfname(r, c));
        out.cells_.reserve(static_cast<std::size_t>(n) * static_cast<std::size_t>(m));
        for (int i = 0; i < n; ++i)
            for (int c = 0; c < m; ++c)
                if (PQgetisnull(r, i, c))
                    out.cells_.emplace_back(std::nullopt);
                else
                    out.cells_.emplace_back(
                        std::string(PQgetvalue(r, i, c), static_cast<std::size_t>(PQgetlength(r, i, c))));
        const char* affected = PQcmdTuples(const_cast<PGresult*>(r));
        out.affected_ = affected && *affected ? std::strtoull(affected, nullptr, 10) : 0;
        out.tag_ = PQcmdStatus(const_cast<PGresult*>(r));
        return out;
    }
};

// ---- the connection's state ------------------------------------------------------------------

struct connection::impl {
    explicit impl(asio::any_io_executor e)
        : ex(std::move(e)), sock(ex), timer(ex), stmt_timer(ex), resolver(ex) {}
    ~impl() { finish(); }

    asio::any_io_executor ex;
    PGconn* conn = nullptr;
    asio::posix::stream_descriptor sock;  // watches libpq's socket; never closes it
    asio::steady_timer timer;             // the connect deadline
    asio::steady_timer stmt_timer;        // the statement deadline, then the bound on draining a cancel
    std::chrono::steady_clock::duration statement_timeout{};
    asio::ip::tcp::resolver resolver;
    diagnostics diag;
    std::deque<notification> notifications;  // arrived, not yet delivered
    std::string info;                        // masked
    bool busy = false;
    bool timed_out = false;

    // Takes the socket back from Asio and closes the connection (libpq closes the socket). Every wait
    // of the operation under way ends now, so nothing keeps the event loop busy for a closed connection.
    void finish() noexcept {
        unwatch();
        timer.cancel();
        stmt_timer.cancel();
        resolver.cancel();
        if (conn) PQfinish(conn);
        conn = nullptr;
    }
    void unwatch() noexcept {
        if (sock.is_open()) {
            boost::system::error_code ignored;
            sock.cancel(ignored);
            (void)sock.release();
        }
    }
    // Watches libpq's current socket (after any PQconnectPoll step it may be a new one).
    bool watch() noexcept {
        unwatch();
        const int fd = conn ? PQsocket(conn) : -1;
        if (fd < 0) return false;
        boost::system::error_code ec;
        sock.assign(fd, ec);
        return !ec;
    }
    // Moves what libpq has read of NOTIFY messages into the queue (after every read of the socket).
    void collect_notifications() {
        if (!conn) return;
        while (PGnotify* n = PQnotifies(conn)) {
            notification x;
            x.channel = n->relname ? n->relname : "";
            x.payload = n->extra ? n->extra : "";
            x.sender_pid = n->be_pid;
            PQfreemem(n);
            notifications.push_back(std::move(x));
        }
    }
    void client_error(std::string message) {
        diag = {};
        diag.severity = "ERROR";
        diag.message = masked(message);
        while (!diag.message.empty() && (diag.message.back() == '\n' || diag.message.back() == ' '))
            diag.message.pop_back();
    }
    void server_error(const PGresult* r) {
        auto field = [r](int f) {
            const char* v = PQresultErrorField(r, f);
            return v ? std::string(v) : std::string();
        };
        diag = {};
        diag.sqlstate = field(PG_DIAG_SQLSTATE);
        diag.severity = field(PG_DIAG_SEVERITY_NONLOCALIZED);
        diag.message = masked(field(PG_DIAG_MESSAGE_PRIMARY));
        diag.detail = masked(field(PG_DIAG_MESSAGE_DETAIL));
        diag.hint = field(PG_DIAG_MESSAGE_HINT);
        const std::string pos = field(PG_DIAG_STATEMENT_POSITION);
        diag.position = pos.empty() ? 0 : std::atoi(pos.c_str());
    }
};

namespace {

// Completes a handler on its associated executor (the connection's by default), never inline: posted
// through the connection's executor, then dispatched to the handler's own.
template <class Handler, class... Args>
void complete(const asio::any_io_executor& ex, Handler h, Args... args) {
    asio::post(ex, asio::append(std::move(h), std::move(args)...));
}

using connect_handler = asio::any_completion_handler<void(error_code)>;
using query_handler = asio::any_completion_handler<void(error_code, result)>;

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
    std::string port = "5432";
    bool done = false;

    void fail(error_code ec, std::string message) {
        if (done) return;
        done = true;
        c->timer.cancel();
        c->client_error(std::move(message));
        c->finish();
        c->busy = false;
        complete(c->ex, std::move(handler), ec);
    }
    void succeed() {
        done = true;
        c->timer.cancel();
        c->busy = false;
        c->diag = {};
        complete(c->ex, std::move(handler), error_code{});
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
            // Every address of every host, in order (localhost may be ::1 and 127.0.0.1): libpq tries
            // each in turn, with the host name beside each address for TLS and error messages.
            std::string host_list, addr_list;
            bool first = true;
            for (std::size_t i = 0; i < hosts.size(); ++i)
                for (const std::string& a : addrs[i]) {
                    if (!first) {
                        host_list += ',';
                        addr_list += ',';
                    }
                    first = false;
                    host_list += hosts[i];
                    addr_list += a;  // empty for a socket folder: libpq uses the host then
                }
            for (std::size_t i = 0; i < keys.size(); ++i)
                if (keys[i] == "host") values[i] = host_list;
            keys.emplace_back("hostaddr");
            values.push_back(addr_list);
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
        c->sock.async_wait(st == PGRES_POLLING_READING ? asio::posix::stream_descriptor::wait_read
                                                       : asio::posix::stream_descriptor::wait_write,
                           [self = shared_from_this()](boost::system::error_code ec) {
                               if (self->done) return;
                               if (self->c->timed_out) return self->step(PGRES_POLLING_FAILED);
                               if (ec) return self->fail(error::connect_failed, ec.message());
                               self->step(PQconnectPoll(self->c->conn));
                           });
    }
};

// The query state machine (simple protocol): send, flush, read until PQgetResult gives NULL.
// How long the server gets to end a statement after a cancel request before the connection is closed.
constexpr std::chrono::seconds cancel_drain_limit{5};

struct query_op : std::enable_shared_from_this<query_op> {
    query_op(std::shared_ptr<connection::impl> i, query_handler h) : c(std::move(i)), handler(std::move(h)) {}
    std::shared_ptr<connection::impl> c;
    query_handler handler;
    result out;
    error_code first_error;
    error_code cancel_reason;  // set once a cancel was requested: the deadline, or Asio cancellation
    bool done = false;

    void finish(error_code ec) {
        done = true;
        c->busy = false;
        c->stmt_timer.cancel();
        auto slot = handler.get_cancellation_slot();
        if (slot.is_connected()) slot.clear();
        // The server's answer to our cancel (57014), or a connection closed because it did not drain:
        // the caller sees why it was cancelled.
        if (cancel_reason && (ec == sqlstate_error("57014") || ec == error::connection_broken))
            ec = cancel_reason;
        if (ec) out = result{};
        complete(c->ex, std::move(handler), ec, std::move(out));
    }

    // Asks the server to cancel the statement (PQcancel blocks: it opens a connection of its own, so it
    // runs on a thread of its own), then keeps reading: the statement ends with 57014 and the connection
    // is drained and usable. Should the server not end it within cancel_drain_limit, the connection is
    // closed and the query completes with the reason.
    void request_cancel(error_code reason) {
        if (done || cancel_reason || !c->conn) return;
        cancel_reason = reason;
        PGcancel* pc = PQgetCancel(c->conn);
        if (pc) {
            try {
                std::thread([pc] {
                    char err[256];
                    (void)PQcancel(pc, err, sizeof err);
                    PQfreeCancel(pc);
                }).detach();
            } catch (...) {  // no thread: the connection cannot be drained; close it
                PQfreeCancel(pc);
                pc = nullptr;
            }
        }
        c->stmt_timer.expires_after(pc ? std::chrono::steady_clock::duration(cancel_drain_limit)
                                       : std::chrono::steady_clock::duration::zero());
        c->stmt_timer.async_wait(
            [weak = std::weak_ptr<query_op>(shared_from_this())](boost::system::error_code ec) {
                auto self = weak.lock();
                if (ec || !self || self->done) return;
                self->c->finish();  // the pending wait completes with an error: finish(connection_broken)
            });
    }
    void broke() {
        c->client_error(PQerrorMessage(c->conn));
        c->finish();  // unusable: a broken connection is never handed on
        finish(error::connection_broken);
    }

    void flush() {
        const int f = PQflush(c->conn);
        if (f < 0) return broke();
        if (f == 0) return read();
        // The server may be sending while we send: wait for either, then consume and flush again.
        c->sock.async_wait(asio::posix::stream_descriptor::wait_write,
                           [self = shared_from_this()](boost::system::error_code ec) {
                               if (ec || !self->c->conn) return self->broke();
                               if (!PQconsumeInput(self->c->conn)) return self->broke();
                               self->flush();
                           });
    }
    void read() {
        for (;;) {
            if (PQisBusy(c->conn)) {  // libpq may already hold the reply: check before waiting
                c->sock.async_wait(asio::posix::stream_descriptor::wait_read,
                                   [self = shared_from_this()](boost::system::error_code ec) {
                                       if (ec || !self->c->conn) return self->broke();
                                       if (!PQconsumeInput(self->c->conn)) return self->broke();
                                       self->read();
                                   });
                return;
            }
            PGresult* r = PQgetResult(c->conn);
            if (!r) break;
            switch (PQresultStatus(r)) {
            case PGRES_TUPLES_OK:
            case PGRES_COMMAND_OK:
            case PGRES_EMPTY_QUERY:
                if (!first_error) out = result_access::from(r);
                break;
            case PGRES_FATAL_ERROR:
            case PGRES_NONFATAL_ERROR:
                if (!first_error) {
                    c->server_error(r);
                    first_error = c->diag.sqlstate.empty() ? error_code(error::connection_broken)
                                                           : sqlstate_error(c->diag.sqlstate);
                }
                break;
            default: break;  // COPY and pipeline statuses are not produced by the simple protocol here
            }
            PQclear(r);
        }
        if (PQstatus(c->conn) == CONNECTION_BAD) return broke();
        c->collect_notifications();  // a NOTIFY may have come in with the reply: kept for the next wait
        if (!first_error) c->diag = {};
        finish(first_error);
    }
};

}  // namespace

// ---- connection ------------------------------------------------------------------------------

connection::connection(asio::any_io_executor ex) : impl_(std::make_shared<impl>(std::move(ex))) {}
connection::~connection() {
    close();
}
connection::connection(connection&&) noexcept = default;
connection& connection::operator=(connection&& o) noexcept {
    if (this != &o) {
        close();
        impl_ = std::move(o.impl_);
    }
    return *this;
}

const asio::any_io_executor& connection::get_executor() const noexcept {
    return impl_->ex;
}
void connection::set_statement_timeout(std::chrono::steady_clock::duration timeout) noexcept {
    impl_->statement_timeout = timeout;
}
bool connection::is_open() const noexcept {
    return impl_ && impl_->conn && PQstatus(impl_->conn) == CONNECTION_OK;
}
const diagnostics& connection::last_error() const noexcept {
    return impl_->diag;
}
const std::string& connection::conninfo() const noexcept {
    return impl_->info;
}
int connection::backend_pid() const noexcept {
    return is_open() ? PQbackendPID(impl_->conn) : 0;
}
void connection::close() noexcept {
    if (impl_) impl_->finish();
}

void connection::start_connect(std::string conninfo, std::chrono::steady_clock::duration timeout,
                               connect_handler handler) {
    auto& c = *impl_;
    c.info = masked(conninfo);
    if (c.busy) return complete(c.ex, std::move(handler), error_code(error::busy));
    c.finish();
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
        if (k == "port") op->port = o->val;
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
    }
    c.busy = true;
    c.timed_out = false;
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

namespace {
// Starts a query whose first step is `send` (PQsendQuery or PQsendQueryParams, which copy what they
// send into libpq's buffer): a busy or closed connection fails at once, a refused send breaks it.
template <class Send>
void begin_query(const std::shared_ptr<connection::impl>& i, query_handler handler, Send send) {
    auto& c = *i;
    if (c.busy) return complete(c.ex, std::move(handler), error_code(error::busy), result{});
    if (!c.conn || PQstatus(c.conn) != CONNECTION_OK)
        return complete(c.ex, std::move(handler), error_code(error::not_connected), result{});
    auto op = std::make_shared<query_op>(i, std::move(handler));
    c.busy = true;
    auto slot = op->handler.get_cancellation_slot();
    if (slot.is_connected())
        slot.assign([weak = std::weak_ptr<query_op>(op)](asio::cancellation_type) {
            if (auto o = weak.lock()) o->request_cancel(asio::error::operation_aborted);
        });
    if (c.statement_timeout > std::chrono::steady_clock::duration::zero()) {
        c.stmt_timer.expires_after(c.statement_timeout);
        c.stmt_timer.async_wait([weak = std::weak_ptr<query_op>(op)](boost::system::error_code ec) {
            if (auto o = weak.lock(); o && !ec) o->request_cancel(error::statement_timeout);
        });
    }
    const bool sent = send(c.conn) != 0;
    asio::post(c.ex, [op, sent] { sent ? op->flush() : op->broke(); });  // never inside the initiating call
}
}  // namespace

void connection::start_query(std::string sql, query_handler handler) {
    begin_query(impl_, std::move(handler), [&](PGconn* conn) { return PQsendQuery(conn, sql.c_str()); });
}

void connection::start_query_params(std::string sql, params p, query_handler handler) {
    begin_query(impl_, std::move(handler), [&](PGconn* conn) {
        const params_access a(p);
        return PQsendQueryParams(conn, sql.c_str(), static_cast<int>(p.size()), a.types(), a.values.data(),
                                 a.lengths.data(), a.formats(), 0);
    });
}

namespace {
using notification_handler = asio::any_completion_handler<void(error_code, notification)>;

// Waits for the socket to be readable, reads, and hands over the first queued notification.
struct notification_op : std::enable_shared_from_this<notification_op> {
    notification_op(std::shared_ptr<connection::impl> i, notification_handler h)
        : c(std::move(i)), handler(std::move(h)) {}
    std::shared_ptr<connection::impl> c;
    notification_handler handler;
    bool cancelled = false;

    void finish(error_code ec) {
        c->busy = false;
        auto slot = handler.get_cancellation_slot();
        if (slot.is_connected()) slot.clear();
        notification n;
        if (!ec) {
            n = std::move(c->notifications.front());
            c->notifications.pop_front();
        }
        complete(c->ex, std::move(handler), ec, std::move(n));
    }
    void wait() {
        if (!c->notifications.empty()) return finish({});
        c->sock.async_wait(asio::posix::stream_descriptor::wait_read, [self = shared_from_this()](
                                                                          boost::system::error_code ec) {
            if (self->cancelled) return self->finish(asio::error::operation_aborted);
            if (ec || !self->c->conn || !PQconsumeInput(self->c->conn)) {
                self->c->client_error(self->c->conn ? PQerrorMessage(self->c->conn) : "connection closed");
                self->c->finish();
                return self->finish(error::connection_broken);
            }
            self->c->collect_notifications();
            self->wait();
        });
    }
};
}  // namespace

void connection::start_wait_notification(notification_handler handler) {
    auto& c = *impl_;
    if (c.busy) return complete(c.ex, std::move(handler), error_code(error::busy), notification{});
    if (!c.conn || PQstatus(c.conn) != CONNECTION_OK)
        return complete(c.ex, std::move(handler), error_code(error::not_connected), notification{});
    auto op = std::make_shared<notification_op>(impl_, std::move(handler));
    c.busy = true;
    auto slot = op->handler.get_cancellation_slot();
    if (slot.is_connected())
        slot.assign([weak = std::weak_ptr<notification_op>(op)](asio::cancellation_type) {
            auto o = weak.lock();
            if (!o || o->cancelled) return;
            o->cancelled = true;  // nothing runs on the server: stop waiting, keep the connection
            boost::system::error_code ignored;
            o->c->sock.cancel(ignored);
        });
    asio::post(c.ex, [op] { op->wait(); });  // never inside the initiating call
}

void connection::start_ping(connect_handler handler) {
    auto hex = asio::get_associated_executor(handler, impl_->ex);  // the ping's handler runs there
    start_query("", asio::bind_executor(
                        hex, [h = std::move(handler)](error_code ec, result) mutable { std::move(h)(ec); }));
}

}  // namespace respool::pg
