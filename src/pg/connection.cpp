// respool::pg::connection: the object itself, the state it shares with its operations, LISTEN/NOTIFY
// and the ping. The connect is in connect.cpp, queries in query.cpp, the session reset in session.cpp.
#include "connection_impl.hpp"

#include <sys/socket.h>

#include <boost/asio/bind_executor.hpp>

namespace asio = boost::asio;

namespace respool::pg {

using detail::complete;
using detail::connect_handler;
using detail::query_handler;

// ---- the state shared with the operations ----------------------------------------------------

void connection::impl::finish() noexcept {
    unwatch();
    timer.cancel();
    stmt_timer.cancel();
    resolver.cancel();
    if (conn) PQfinish(conn);
    conn = nullptr;
}
void connection::impl::unwatch() noexcept {
    if (sock.is_open()) {
        boost::system::error_code ignored;
        sock.cancel(ignored);
        (void)sock.release();
    }
}
// Watches libpq's current socket (after any PQconnectPoll step it may be a new one).
bool connection::impl::watch() noexcept {
    unwatch();
    const int fd = conn ? PQsocket(conn) : -1;
    if (fd < 0) return false;
    // The socket's own family (TCP or a Unix-domain socket), so that Asio treats it as the stream it is.
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) return false;
    boost::system::error_code ec;
    sock.assign(boost::asio::generic::stream_protocol(address.ss_family, 0), fd, ec);
    return !ec;
}
// Moves what libpq has read of NOTIFY messages into the queue (after every read of the socket).
void connection::impl::collect_notifications() {
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
namespace {
// clear_diagnostics names each field: a field added to diagnostics must be added there too.
struct diagnostics_fields {
    std::string sqlstate, severity, message, detail, hint;
    int position;
};
static_assert(sizeof(diagnostics) == sizeof(diagnostics_fields), "clear_diagnostics: clear the new field");
}  // namespace

void connection::impl::clear_diagnostics() noexcept {
    diag.sqlstate.clear();
    diag.severity.clear();
    diag.message.clear();
    diag.detail.clear();
    diag.hint.clear();
    diag.position = 0;
}
void connection::impl::client_error(std::string message) {
    diag = {};
    diag.severity = "ERROR";
    diag.message = masked(message);
    while (!diag.message.empty() && (diag.message.back() == '\n' || diag.message.back() == ' '))
        diag.message.pop_back();
}
void connection::impl::server_error(const PGresult* r) {
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

void connection::impl::op_ended() {
    busy = false;
    last_reply = std::chrono::steady_clock::now();
    abort_current = nullptr;
    abort_current_of = nullptr;
    if (on_idle) asio::post(ex, std::exchange(on_idle, nullptr));
}

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
void connection::set_cancel_drain_limit(std::chrono::steady_clock::duration limit) noexcept {
    impl_->cancel_drain_limit = limit;
}
std::chrono::steady_clock::time_point connection::last_reply() const noexcept {
    return impl_->last_reply;
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
void connection::set_statement_mode(statement_mode mode, std::size_t cache_capacity) noexcept {
    impl_->mode = mode;
    impl_->cache.set_capacity(cache_capacity);
    while (impl_->cache.size() > cache_capacity) impl_->to_deallocate.push_back(impl_->cache.evict_oldest());
}
std::size_t connection::cached_statements() const noexcept {
    return impl_->cache.size();
}

void connection::start_query(std::string sql, query_handler handler, asio::any_io_executor handler_ex) {
    detail::start_query(impl_, std::move(sql), std::nullopt, std::move(handler), std::move(handler_ex));
}

void connection::start_query_params(std::string sql, params p, query_handler handler,
                                    asio::any_io_executor handler_ex) {
    detail::start_query(impl_, std::move(sql), std::move(p), std::move(handler), std::move(handler_ex));
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
        auto slot = handler.get_cancellation_slot();
        if (slot.is_connected()) slot.clear();
        notification n;
        if (!ec) {
            n = std::move(c->notifications.front());
            c->notifications.pop_front();
        }
        c->op_ended();
        complete(c->ex, std::move(handler), ec, std::move(n));
    }
    void wait() {
        if (!c->notifications.empty()) return finish({});
        c->sock.async_wait(asio::socket_base::wait_read, [self = shared_from_this()](
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
    auto stop = [weak = std::weak_ptr<notification_op>(op)] {
        auto o = weak.lock();
        if (!o || o->cancelled) return;
        o->cancelled = true;  // nothing runs on the server: stop waiting, keep the connection
        boost::system::error_code ignored;
        o->c->sock.cancel(ignored);
    };
    c.abort_current = stop;
    auto slot = op->handler.get_cancellation_slot();
    if (slot.is_connected()) slot.assign([stop](asio::cancellation_type) { stop(); });
    asio::post(c.ex, [op] { op->wait(); });  // never inside the initiating call
}

void connection::start_ping(connect_handler handler) {
    auto hex = asio::get_associated_executor(handler, impl_->ex);  // the ping's handler runs there
    detail::start_query(impl_, "", std::nullopt,
                        asio::bind_executor(hex, [h = std::move(handler)](
                                                     error_code ec, result) mutable { std::move(h)(ec); }),
                        {}, true);
}

void connection::set_tracer(std::shared_ptr<statement_tracer> tracer) noexcept {
    impl_->tracer = std::move(tracer);
}

}  // namespace respool::pg
