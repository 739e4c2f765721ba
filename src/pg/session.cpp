// What a borrower leaves in a PostgreSQL session, and the reset that keeps it from the next borrower
// (docs/06-postgresql.md, "Reset on return"). Tracking costs a few string compares per result: the
// command tag of every result, one scan of the text of every statement the cache does not hold
// (statement_text.hpp: temporary objects, advisory locks, set_config, SET, LISTEN, PREPARE, DO, ...),
// and at release a compare of the reported settings with their values at connect. A clean connection
// costs no round trip.
#include "connection_impl.hpp"
#include "session_rules.hpp"

#include <boost/asio/cancellation_type.hpp>

#include <poll.h>

#include <cstring>

namespace asio = boost::asio;

namespace respool::pg {

using detail::complete;
using detail::connect_handler;

namespace {

void receive_notice(void* arg, const PGresult* r) {
    const char* severity = PQresultErrorField(r, PG_DIAG_SEVERITY_NONLOCALIZED);
    if (severity && (std::strcmp(severity, "FATAL") == 0 || std::strcmp(severity, "PANIC") == 0)) {
        auto* c = static_cast<connection::impl*>(arg);
        c->server_fatal = true;
        c->server_error(r);
    }
}

}  // namespace

void connection::impl::listen_for_fatal() noexcept {
    if (conn) PQsetNoticeReceiver(conn, receive_notice, this);
}

void connection::impl::snapshot_session() {
    for (std::size_t i = 0; i < session_state::watched.size(); ++i) {
        const char* v = conn ? PQparameterStatus(conn, session_state::watched[i]) : nullptr;
        session.reported[i] = v ? v : "";
    }
    session.encoding = conn ? PQclientEncoding(conn) : -1;
}

std::string connection::impl::restore_startup_settings() const {
    std::string script;
    for (std::size_t i = 0; i < session_state::watched.size(); ++i) {
        const char* v = conn ? PQparameterStatus(conn, session_state::watched[i]) : nullptr;
        if (!v || at_connect[i] == v) continue;
        char* literal = PQescapeLiteral(conn, at_connect[i].data(), at_connect[i].size());
        if (!literal) continue;  // out of memory: the setting stays as the reset left it
        if (!script.empty()) script += "; ";
        script += std::string("SET ") + session_state::watched[i] + " = " + literal;
        PQfreemem(literal);
    }
    return script;
}

void connection::impl::track_result(const PGresult* r) {
    const char* tag = PQcmdStatus(const_cast<PGresult*>(r));
    switch (detail::classify_command_tag(tag ? tag : "")) {
    case detail::tag_effect::none: break;
    case detail::tag_effect::dirty: session.dirty = true; break;
    case detail::tag_effect::user_prepared: session.dirty = session.user_prepared = true; break;
    case detail::tag_effect::statement_dropped:
        // Which one the tag does not say: the transaction-control statements are prepared again under
        // new names (the cache's own statements are, when the server reports them missing), and the
        // reset on return drops what is left with DEALLOCATE ALL.
        cache.forget_controls();
        session.dirty = session.user_prepared = true;
        break;
    case detail::tag_effect::statements_dropped:
        cache.clear();  // the server dropped every prepared statement, ours too
        to_deallocate.clear();
        session.dirty = true;
        break;
    }
}

void connection::impl::track_error(const std::string& sqlstate) {
    if (sqlstate != "25006" || !conn) return;
    auto on = [this](const char* name) {
        const char* v = PQparameterStatus(conn, name);
        return v && std::strcmp(v, "on") == 0;
    };
    // A read-only transaction of the borrower's own also says 25006; a demoted server reports itself.
    if (detail::failover_signal(sqlstate, on("default_transaction_read_only"), on("in_hot_standby")))
        session.failover = true;
}

bool connection::needs_reset(reset_policy policy) const noexcept {
    const auto& c = *impl_;
    if (c.busy || !c.conn || PQstatus(c.conn) != CONNECTION_OK || c.server_fatal) return true;
    if (PQtransactionStatus(c.conn) != PQTRANS_IDLE || !c.deferred_begin.empty()) return true;
    if (policy == reset_policy::always) return true;
    return detail::full_reset(policy, policy == reset_policy::tracked && c.session_changed());
}

bool connection::impl::session_changed() const noexcept {
    if (session.dirty || session.user_prepared) return true;
    if (!conn) return true;  // nothing to compare with: no clean release to trust
    if (PQclientEncoding(conn) != session.encoding) return true;
    for (std::size_t i = 0; i < session_state::watched.size(); ++i) {
        if (i == session_state::client_encoding) continue;  // compared above, without a walk
        const char* v = PQparameterStatus(conn, session_state::watched[i]);
        if (session.reported[i] != (v ? v : "")) return true;
    }
    return false;
}

void connection::mark_dirty() noexcept {
    impl_->session.dirty = true;
}

bool connection::failover_detected() const noexcept {
    return impl_->session.failover;
}

std::string_view connection::parameter_status(const char* name) const noexcept {
    const char* v = impl_->conn ? PQparameterStatus(impl_->conn, name) : nullptr;
    return v ? std::string_view(v) : std::string_view();
}

transaction_status connection::transaction_state() const noexcept {
    if (!impl_->conn) return transaction_status::unknown;
    switch (PQtransactionStatus(impl_->conn)) {
    case PQTRANS_IDLE:  // a transaction whose BEGIN goes with its first statement is open already
        return impl_->deferred_begin.empty() ? transaction_status::idle : transaction_status::in_transaction;
    case PQTRANS_ACTIVE: return transaction_status::active;
    case PQTRANS_INTRANS: return transaction_status::in_transaction;
    case PQTRANS_INERROR: return transaction_status::in_error;
    default: return transaction_status::unknown;
    }
}

bool connection::alive_nowait(std::chrono::steady_clock::duration trust_for) noexcept {
    auto& c = *impl_;
    if (!c.conn || PQstatus(c.conn) != CONNECTION_OK || c.server_fatal) return false;
    if (c.busy) return false;  // not idle: not a connection to hand out
    if (trust_for > std::chrono::steady_clock::duration::zero() &&
        std::chrono::steady_clock::now() - c.last_reply < trust_for)
        return true;
    // Nothing arrived: as alive as the last round trip said (the common case: one poll). Something
    // did on an idle connection: a NOTIFY, a ParameterStatus, or the server's last words (a FATAL, or
    // a WARNING at an immediate shutdown) and the end of the stream. PQconsumeInput reads once, so
    // the end may show only at the next read: read until nothing is left (bounded).
    for (int reads = 0; reads < 8; ++reads) {
        pollfd p{PQsocket(c.conn), POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0) return true;
        // PQconsumeInput only reads; PQnotifies (in collect_notifications) parses, which is when libpq
        // hands an unsolicited FATAL to receive_notice.
        const bool read = PQconsumeInput(c.conn) != 0;
        if (read) c.collect_notifications();
        if (!read || PQstatus(c.conn) != CONNECTION_OK || c.server_fatal) {
            if (!c.server_fatal) c.client_error(PQerrorMessage(c.conn));
            c.finish();
            return false;
        }
    }
    return true;  // a stream of notifications: alive
}

namespace {

struct reset_op : std::enable_shared_from_this<reset_op> {
    reset_op(std::shared_ptr<connection::impl> i, connect_handler h, reset_policy p)
        : c(std::move(i)), handler(std::move(h)), policy(p) {}
    std::shared_ptr<connection::impl> c;
    connect_handler handler;
    reset_policy policy;
    bool full = false;
    bool done = false;

    void finish(error_code ec) {
        if (done) return;
        done = true;
        auto slot = handler.get_cancellation_slot();
        if (slot.is_connected()) slot.clear();
        if (ec) c->finish();  // a connection that could not be reset is not reused
        complete(c->ex, std::move(handler), ec);
    }

    void start() {
        if (c->busy) {  // a statement still running (or a wait): end it first, then reset
            c->on_idle = [self = shared_from_this()] { self->after_idle(); };
            if (c->abort_current) c->abort_current();
            return;
        }
        after_idle();
    }

    void after_idle() {
        if (done) return;
        if (!c->conn || PQstatus(c->conn) != CONNECTION_OK || c->server_fatal)
            return finish(error::connection_broken);
        detail::transaction_phase phase = detail::transaction_phase::unusable;
        switch (PQtransactionStatus(c->conn)) {
        case PQTRANS_IDLE: phase = detail::transaction_phase::idle; break;
        case PQTRANS_INTRANS:
        case PQTRANS_INERROR: phase = detail::transaction_phase::open; break;
        default: break;
        }
        full = detail::full_reset(policy, policy == reset_policy::tracked && c->session_changed());
        std::optional<std::string> script = detail::reset_script(phase, full, c->session.user_prepared);
        if (!script) return finish(error::connection_broken);
        if (script->empty()) return finish({});
        detail::start_query(
            c, std::move(*script), std::nullopt,
            [self = shared_from_this()](error_code ec, result) {
                if (!ec && self->full && !self->done) {
                    self->c->session = {};
                    self->c->notifications.clear();  // UNLISTEN *: none is for the next borrower
                    // Behind a pooler RESET ALL went back to the pooler's defaults: the client's own
                    // startup settings (its application_name, client_encoding, ...) are set again, one
                    // more round trip only then. Straight to a server RESET ALL restored them already.
                    if (std::string restore = self->c->restore_startup_settings(); !restore.empty())
                        return self->restore(std::move(restore));
                    self->c->snapshot_session();
                }
                self->finish(ec);
            },
            {}, true);
    }

    void restore(std::string script) {
        detail::start_query(
            c, std::move(script), std::nullopt,
            [self = shared_from_this()](error_code ec, result) {
                if (!ec) {
                    self->c->session = {};  // its SET tags are not a borrower's change
                    self->c->snapshot_session();
                }
                self->finish(ec);
            },
            {}, true);
    }
};

}  // namespace

void connection::start_reset(reset_policy policy, connect_handler handler) {
    impl_->deferred_begin.clear();  // a transaction that never ran a statement: nothing to roll back
    auto op = std::make_shared<reset_op>(impl_, std::move(handler), policy);
    auto slot = op->handler.get_cancellation_slot();
    if (slot.is_connected())
        slot.assign([weak = std::weak_ptr<reset_op>(op)](asio::cancellation_type) {
            // Out of time: the session's state is unknown, so the connection is closed.
            if (auto o = weak.lock(); o && !o->done) o->finish(asio::error::operation_aborted);
        });
    asio::post(impl_->ex, [op] { op->start(); });  // never inside the initiating call
}

namespace detail {

void defer_begin(connection& c, std::string begin_sql) {
    connection_access::impl_of(c)->deferred_begin = std::move(begin_sql);
}

bool drop_deferred_begin(connection& c) noexcept {
    auto& pending = connection_access::impl_of(c)->deferred_begin;
    const bool was = !pending.empty();
    pending.clear();
    return was;
}

}  // namespace detail

}  // namespace respool::pg
