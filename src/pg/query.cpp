// respool::pg::connection's queries: the simple protocol for scripts, bound parameters through the
// per-connection statement cache (or libpq's unnamed statement), and the reading of every answer, each
// wait an Asio wait on libpq's socket. A statement not yet cached is prepared in the same round trip
// that runs it (libpq's pipeline mode: Parse, Bind/Execute, Sync), and statements evicted from the
// cache are deallocated in that round trip too (DEALLOCATE after a second Sync, so a failure of the
// user's statement cannot abort them and theirs cannot touch the user's result). What is sent, and
// what the cache does, is decided by plain functions (send_plan.hpp); this file runs their plan.
#include "cancel_request.hpp"
#include "connection_impl.hpp"
#include "control_statements.hpp"
#include "send_plan.hpp"
#include "wire_access.hpp"

#include <boost/asio/dispatch.hpp>

#include <functional>
#include <utility>

namespace asio = boost::asio;

namespace respool::pg {

using detail::cancel_mailbox;
using detail::complete;
using detail::query_handler;

namespace {

// How long after a cancel request returned, the statement still running, the next one is sent.
constexpr std::chrono::milliseconds cancel_resend{100};

bool is_sqlstate(const error_code& ec, const char* s) {
    return ec && ec == sqlstate_error(s);  // most statements succeed: no code to make for them
}

// Why a COPY that streams rows through the client is refused (the diagnostics' message).
constexpr const char* copy_refusal =
    "COPY ... FROM STDIN and COPY ... TO STDOUT need the COPY sub-protocol, which async_query does not "
    "speak: use async_copy_in / async_copy_out (respool/pg/copy.hpp), load rows with INSERT (several "
    "rows per statement, bound parameters) or let the server read or write a file (COPY ... FROM/TO "
    "'path')";

// A borrowed connection back to its pool at the end of a statement run for pool::async_query.
void give_back(lease<connection>& l, respool::diagnostics* diag, const error_code& ec) {
    if (!l) return;
    if (ec && diag) detail::report_failure(*diag, *l, ec);
    if (ec == condition::connection_broken)
        l.poison();
    else
        l.release();  // reset on the way back when the statement changed the session
}

struct query_op : std::enable_shared_from_this<query_op> {
    query_op(std::shared_ptr<connection::impl> i, query_handler h, asio::any_io_executor hx, std::string s,
             std::optional<params> q, bool pool_stmt)
        : c(std::move(i)),
          handler(std::move(h)),
          handler_ex(std::move(hx)),
          sql(std::move(s)),
          p(std::move(q)),
          pool_statement(pool_stmt) {
        if (c->tracer) started = std::chrono::steady_clock::now();  // no clock read without a tracer
    }
    ~query_op() {
        if (box) box->close();
        if (!done && c->abort_current_of == this) {  // destroyed unrun (its event loop went away)
            c->abort_current = nullptr;
            c->abort_current_of = nullptr;
        }
    }
    std::shared_ptr<connection::impl> c;
    query_handler handler;
    asio::any_io_executor handler_ex;  // the handler's, read before it was erased (or empty)
    std::string sql;
    std::optional<params> p;  // none: the simple protocol
    result out;
    error_code first_error;
    error_code cancel_reason;  // set once a cancel was requested: the deadline, or Asio cancellation
    bool done = false;
    bool initiating = true;               // still inside start_query: completions are posted
    bool statement_ended = false;         // after a cancel: the reply is read, cancel requests still out
    std::shared_ptr<cancel_mailbox> box;  // made at the first cancel request (most queries have none)

    // What the server answers, in order: the part of the round trip each result belongs to.
    using part = detail::reply_part;
    boost::container::small_vector<part, 6> parts;  // inline: no allocation per query
    std::size_t at = 0;
    std::size_t first_deallocate = 0;
    std::vector<std::string> deallocating;  // the names this round trip deallocates
    std::string preparing;                  // the name this round trip prepares, if any
    bool prepare_failed = false;
    // Transaction-control statements by name (control_statements.hpp): the statement itself, the BEGIN
    // sent with it, and the one this round trip prepares (under `control_preparing_name`), or -1.
    int control = -1;
    int begin_control = -1;
    int preparing_control = -1;
    std::string control_preparing_name;
    bool control_prepare_failed = false;
    bool control_missing = false;  // the server had no such statement (26000): prepared again
    bool begin_missing = false;
    std::string begin_sent;  // the deferred BEGIN this round trip carries (put back for a retry)
    bool pipeline = false;
    bool read_first_done = false;  // this round trip has decided whether to read before it waits
    bool idle_before = false;      // no transaction was open when it was sent (a retry is safe)
    bool retried = false;
    bool refused = false;           // send() refused the statement before sending anything
    detail::statement_facts facts;  // what its text says (scanned unless the statement was cached)
    int nulls_at_sync = 0;
    bool pool_statement = false;                    // the pool's own (for the tracer)
    std::chrono::steady_clock::time_point started;  // with a tracer: when it was sent
    lease<connection> borrowed;                     // pool::async_query's: back before the handler runs
    respool::diagnostics* diag = nullptr;           // its caller's, filled when the statement fails

    void finish(error_code ec) {
        done = true;
        if (box) box->close();
        c->stmt_timer.cancel();
        if (cancel_reason) c->timer.cancel();
        auto slot = handler.get_cancellation_slot();
        if (slot.is_connected()) slot.clear();
        // The server's answer to our cancel (57014), or a connection closed because it did not drain:
        // the caller sees why it was cancelled.
        if (cancel_reason && (is_sqlstate(ec, "57014") || ec == error::connection_broken)) ec = cancel_reason;
        if (ec) out = result{};
        if (c->tracer)
            detail::trace_statement(*c, sql, p ? p->size() : 0, started, ec ? nullptr : &out, ec,
                                    pool_statement);
        c->op_ended();
        give_back(borrowed, diag, ec);
        if (initiating)
            complete(c->ex, std::move(handler), ec, std::move(out));  // never inside the initiating call
        else  // a reply arrived: the handler runs now, on its executor (posted there when it is another)
            // (The executor goes with the handler: a copy kept here would count as work on it.)
            detail::complete_here(*c, std::move(handler), std::exchange(handler_ex, {}), ec, std::move(out));
    }

    // Asks the server to cancel the statement, then keeps reading: the statement ends with 57014 and
    // the connection is drained and usable. A cancel request that reaches the backend before it has
    // begun the statement is ignored by the server, so while the statement runs the request is sent
    // again (cancel_resend after each returns). The query completes only when every request has
    // returned: one still on its way could otherwise cancel the next borrower's statement. Should the
    // server not end the statement within c->cancel_drain_limit, the connection is closed and the query
    // completes with the reason.
    void request_cancel(error_code reason) {
        if (done || cancel_reason || !c->conn) return;
        cancel_reason = reason;
        box = std::make_shared<cancel_mailbox>();
        box->on_return = [weak = std::weak_ptr<query_op>(shared_from_this())] {
            if (auto self = weak.lock()) self->cancel_returned();
        };
        const bool sent = send_cancel();
        c->stmt_timer.expires_after(sent ? c->cancel_drain_limit
                                         : std::chrono::steady_clock::duration::zero());
        c->stmt_timer.async_wait(
            [weak = std::weak_ptr<query_op>(shared_from_this())](boost::system::error_code ec) {
                auto self = weak.lock();
                if (ec || !self || self->done) return;
                self->c->client_error("the server did not end the cancelled statement");
                self->c->finish();  // the pending wait completes with an error: finish(connection_broken)
            });
    }
    // False: no request could be sent (no thread): the connection cannot be drained; it is closed.
    bool send_cancel() { return detail::send_cancel_request(c->conn, box, c->ex); }
    void cancel_returned() {
        if (done) return;
        if (statement_ended) {
            if (!box->busy()) conclude();
            return;
        }
        c->timer.expires_after(cancel_resend);
        c->timer.async_wait(
            [weak = std::weak_ptr<query_op>(shared_from_this())](boost::system::error_code ec) {
                auto self = weak.lock();
                if (!ec && self && !self->done && !self->statement_ended && !self->box->busy())
                    self->send_cancel();
            });
    }
    void broke(const boost::system::error_code& wait_error = {}) {
        c->client_error(c->wait_failure(wait_error));
        c->finish();  // unusable: a broken connection is never handed on
        finish(error::connection_broken);
    }

    // Queues the statement (and what the cache needs done) in libpq's buffer, as plan_send decides;
    // false: libpq refused (or `refused`: the statement was refused before anything was sent).
    bool send() {
        PGconn* pc = c->conn;
        detail::send_inputs in;
        in.sql = sql;
        in.bound = p.has_value();
        in.through_cache = p && c->mode == statement_mode::cache && c->cache.capacity() != 0;
        if (in.through_cache) {
            const params_access a(*p);
            c->key.assign(sql);  // the SQL text and the parameter types: one prepared statement each
            c->key.push_back('\0');
            c->key.append(reinterpret_cast<const char*>(a.types()), p->size() * sizeof(Oid));
            in.cached = c->cache.find(c->key);
            in.cache_full = c->cache.size() >= c->cache.capacity();
        }
        in.begin_pending = !c->deferred_begin.empty();
        in.deallocations_pending = c->to_deallocate.size();
        in.named = c->mode == statement_mode::cache && c->cache.capacity() != 0;
        if (in.named && !p) {
            in.control = detail::control_index(sql);
            in.control_prepared = c->cache.control_ready(in.control);
        }
        if (in.named && in.begin_pending) {
            in.begin_control = detail::control_index(c->deferred_begin);
            in.begin_control_prepared = c->cache.control_ready(in.begin_control);
        }
        const detail::send_plan plan = detail::plan_send(in);
        if (plan.refuse) {
            refused = true;
            c->client_error(copy_refusal);
            return false;
        }
        if (plan.session_dirty) c->session.dirty = true;
        if (!in.cached) facts = plan.facts;
        // A transaction's deferred BEGIN goes in this round trip (never again on a retry: a statement
        // that opened a transaction is not retried; a BEGIN by name the server did not have is).
        begin_sent = std::exchange(c->deferred_begin, {});
        const std::string& begin_sql = begin_sent;
        idle_before = PQtransactionStatus(pc) == PQTRANS_IDLE && begin_sql.empty();
        control = plan.control;
        begin_control = plan.begin_control;
        preparing_control = plan.prepare_control;
        if (preparing_control >= 0) control_preparing_name = c->cache.next_name();
        control_prepare_failed = control_missing = begin_missing = false;
        parts.clear();
        read_first_done = false;
        at = 0;
        out = {};
        first_error = {};
        preparing.clear();
        prepare_failed = false;
        const std::string* name = nullptr;  // the named statement run (the cache's node, or `preparing`)
        if (plan.path == detail::send_path::cached) name = &in.cached->name;
        if (plan.path == detail::send_path::pipeline) {
            if (in.cached) {
                name = &in.cached->name;
            } else {
                preparing = detail::reserve_statement(c->cache, c->to_deallocate);
                name = &preparing;
            }
            if (plan.deallocations != 0) {
                deallocating = std::move(c->to_deallocate);
                c->to_deallocate.clear();
            }
        }
        if (plan.pipeline) {
            if (!PQenterPipelineMode(pc)) return false;
            pipeline = true;
        }
        std::size_t next_deallocate = 0;
        for (const part now : plan.parts) {
            if (now == part::deallocate && next_deallocate == 0) first_deallocate = parts.size();
            parts.push_back(now);
            if (!send_part(now, plan.path, begin_sql, name, next_deallocate)) return false;
        }
        return true;
    }

    // Sends one part of the plan.
    bool send_part(part now, detail::send_path path, const std::string& begin_sql, const std::string* name,
                   std::size_t& next_deallocate) {
        PGconn* pc = c->conn;
        switch (now) {
        case part::begin:
            if (begin_control >= 0) return send_control(begin_control);
            return PQsendQueryParams(pc, begin_sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) != 0;
        case part::prepare_control:  // the literal's characters end with a NUL: a C string
            return PQsendPrepare(pc, control_preparing_name.c_str(),
                                 detail::control_texts[std::size_t(preparing_control)].data(), 0,
                                 nullptr) != 0;
        case part::prepare: {
            const params_access a(*p);
            return PQsendPrepare(pc, name->c_str(), sql.c_str(), static_cast<int>(p->size()), a.types()) != 0;
        }
        case part::rows: return send_statement(path, begin_sql, name);
        case part::sync: return PQpipelineSync(pc) != 0;
        case part::deallocate: {
            const std::string stmt = "DEALLOCATE " + deallocating[next_deallocate++];
            return PQsendQueryParams(pc, stmt.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) != 0;
        }
        }
        return false;
    }

    // A transaction-control statement by its name (prepared in this round trip or before).
    bool send_control(int i) {
        const std::string& name = i == preparing_control ? control_preparing_name : c->cache.control_name(i);
        return PQsendQueryPrepared(c->conn, name.c_str(), 0, nullptr, nullptr, nullptr, 0) != 0;
    }

    // The caller's statement, the plan's way.
    bool send_statement(detail::send_path path, const std::string& begin_sql, const std::string* name) {
        PGconn* pc = c->conn;
        if (path == detail::send_path::control) return send_control(control);
        if (path == detail::send_path::simple) {
            if (!begin_sql.empty())  // one simple-protocol script: its last result is the caller's
                return PQsendQuery(pc, (begin_sql + ";\n" + sql).c_str()) != 0;
            return PQsendQuery(pc, sql.c_str()) != 0;
        }
        const params_access a(*p);
        const int n = static_cast<int>(p->size());
        if (path == detail::send_path::unnamed)
            return PQsendQueryParams(pc, sql.c_str(), n, a.types(), a.values.data(), a.lengths(), a.formats(),
                                     0) != 0;
        return PQsendQueryPrepared(pc, name->c_str(), n, a.values.data(), a.lengths(), a.formats(), 0) != 0;
    }

    void flush() {
        const int f = PQflush(c->conn);
        if (f < 0) return broke();
        if (f == 0) return read();
        // The server may be sending while we send: wait for either, then consume and flush again.
        c->sock.async_wait(asio::socket_base::wait_write,
                           [self = shared_from_this()](boost::system::error_code ec) {
                               if (ec || !self->c->conn) return self->broke();
                               if (!PQconsumeInput(self->c->conn)) return self->broke();
                               self->flush();
                           });
    }

    // Looks at one result; frees it unless the caller gets it.
    void take(part now, PGresult* r) {
        switch (PQresultStatus(r)) {
        case PGRES_TUPLES_OK:
        case PGRES_COMMAND_OK:
        case PGRES_EMPTY_QUERY:
            if (now == part::rows) {
                c->track_result(r);
                if (!first_error) {
                    out = result_access::adopt(r);  // the last statement's result wins
                    return;
                }
            }
            break;
        case PGRES_FATAL_ERROR:
        case PGRES_NONFATAL_ERROR:
            if (now == part::deallocate) {  // still on the server (an aborted transaction): next time
                const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
                if (detail::deallocate_again(false, state ? state : ""))
                    c->to_deallocate.push_back(deallocating[at - first_deallocate]);
                break;
            }
            if (now == part::prepare) prepare_failed = true;
            if (now == part::prepare_control) control_prepare_failed = true;
            if (now == part::begin || (now == part::rows && control >= 0)) {
                const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
                if (state && std::string_view(state) == "26000")
                    (now == part::begin ? begin_missing : control_missing) = true;
            }
            if (!first_error) {
                c->server_error(r);
                first_error = c->diag.sqlstate.empty() ? error_code(error::connection_broken)
                                                       : sqlstate_error(c->diag.sqlstate);
            }
            break;
        case PGRES_PIPELINE_ABORTED:
            if (now == part::prepare) prepare_failed = true;
            if (now == part::prepare_control) control_prepare_failed = true;
            if (now == part::deallocate && detail::deallocate_again(true, {}))
                c->to_deallocate.push_back(deallocating[at - first_deallocate]);
            break;
        default: break;  // COPY is not produced by these statements
        }
        PQclear(r);
    }

    // One read of the socket once the handlers queued on the event loop have run (read_first.hpp),
    // then on as after a wait.
    void read_after_queue() {
        asio::post(c->ex, [self = shared_from_this()] {
            if (self->done) return;
            if (!self->c->conn || !PQconsumeInput(self->c->conn)) return self->broke();
            const bool found = !PQisBusy(self->c->conn);
            self->c->read_first.tried(found);
            self->read(!found);
        });
    }

    // `first_read_failed`: the first read has just found no complete result, so a receive tried at once
    // would find nothing too (wait_readable_after_empty_read).
    void read(bool first_read_failed = false) {
        while (at < parts.size()) {
            if (PQisBusy(c->conn)) {  // libpq may already hold the reply: check before waiting
                // The round trip's first read may come after the loop's queue, before any wait.
                if (!read_first_done) {
                    read_first_done = true;
                    if (c->read_first.try_now()) return read_after_queue();
                }
                auto on_readable = [self = shared_from_this()](boost::system::error_code ec) {
                    if (ec || !self->c->conn) return self->broke(ec);
                    if (!PQconsumeInput(self->c->conn)) return self->broke();
                    self->read();
                };
                if (first_read_failed)
                    c->wait_readable_after_empty_read(std::move(on_readable));
                else
                    c->wait_readable(std::move(on_readable));
                return;
            }
            PGresult* r = PQgetResult(c->conn);
            const part now = parts[at];
            if (now == part::sync) {  // one PIPELINE_SYNC result, with no NULL after it
                if (!r) {             // libpq waits for the Sync (PQisBusy) or lost the thread: never spin
                    if (PQstatus(c->conn) == CONNECTION_BAD || ++nulls_at_sync > 2) return broke();
                    continue;
                }
                nulls_at_sync = 0;
                if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) ++at;
                PQclear(r);
                continue;
            }
            if (!r) {  // the end of this part's results
                ++at;
                continue;
            }
            switch (PQresultStatus(r)) {
            case PGRES_COPY_IN:
            case PGRES_COPY_OUT:
            case PGRES_COPY_BOTH: {
                const ExecStatusType st = PQresultStatus(r);
                PQclear(r);  // libpq returns such a result again at every call: never loop on it
                return end_copy(st);
            }
            case PGRES_BAD_RESPONSE:
                PQclear(r);
                c->client_error("the server's reply could not be understood");
                c->finish();
                return finish(error::connection_broken);
            default: take(now, r);
            }
        }
        if (pipeline) {
            pipeline = false;
            if (!PQexitPipelineMode(c->conn)) return broke();
        }
        if (PQstatus(c->conn) == CONNECTION_BAD) return broke();
        c->collect_notifications();  // a NOTIFY may have come in with the reply: kept for the next wait
        if (cancel_reason && box->busy() && first_error == condition::connection_broken) {
            // The server is ending the session (a shutdown's 57P01, a crash): no next statement will
            // run on this connection for a late cancel request to hit. Close it; the caller need not
            // wait for the requests (a server restarting may hold them for seconds).
            c->finish();
            return finish(first_error);
        }
        if (cancel_reason && box->busy()) {  // cancel_returned concludes
            statement_ended = true;
            return detail::hold_for_cancel_return(shared_from_this());
        }
        conclude();
    }

    // The server entered a COPY that a statement cannot carry (a COPY that slipped past the text
    // check). COPY FROM STDIN is ended at once with CopyFail: the server answers an error and the
    // connection stays usable. Rows the server streams (TO STDOUT, or a replication stream) cannot be
    // refused: the connection is closed. Either way the statement fails with unsupported_statement.
    void end_copy(ExecStatusType st) {
        if (!first_error) first_error = error::unsupported_statement;
        c->client_error(copy_refusal);
        if (st == PGRES_COPY_IN && !pipeline &&
            PQputCopyEnd(c->conn, "respool: the COPY sub-protocol is not supported by async_query") == 1)
            return flush();  // CopyFail goes out; the server's error and ReadyForQuery are read as usual
        c->finish();
        finish(error::unsupported_statement);
    }

    // The reply is complete (and every cancel request has returned): the cache learns what happened,
    // a stale statement is prepared again once, and the caller gets the outcome.
    void conclude() {
        deallocating.clear();
        // After the whole reply: the ParameterStatus a failover brings comes after the error.
        if (first_error) c->track_error(c->diag.sqlstate);
        if (!preparing.empty() && !prepare_failed)
            c->cache.insert(c->key, {std::move(preparing), facts.session_effects});
        if (preparing_control >= 0 && !control_prepare_failed)
            c->cache.control_prepared(preparing_control, std::move(control_preparing_name));
        // A control statement the server did not have (dropped by a DEALLOCATE that was not seen): it is
        // prepared again under a new name next time, and the statement runs once more now when that is
        // safe: a deferred BEGIN that failed opened nothing (the pipeline's Sync ended its implicit
        // transaction); a COMMIT or BEGIN only when no transaction was open; a ROLLBACK always (the
        // failure aborted the transaction: rolling it back is still what was asked).
        if (begin_missing) c->cache.forget_control(begin_control);
        if (control_missing) c->cache.forget_control(control);
        if ((begin_missing || control_missing) && !retried && !cancel_reason) {
            if (begin_missing || idle_before || control == detail::rollback_index) {
                retried = true;
                c->deferred_begin = std::move(begin_sent);
                c->clear_diagnostics();
                if (!send()) return broke();
                return flush();
            }
        }
        const detail::stale_decision stale =
            detail::on_stale_statement({.cache_mode = p && c->mode == statement_mode::cache,
                                        .cancelled = static_cast<bool>(cancel_reason),
                                        .plan_changed = is_sqlstate(first_error, "0A000"),
                                        .statement_missing = is_sqlstate(first_error, "26000"),
                                        .idle_before = idle_before,
                                        .retried = retried});
        if (stale.forget) {
            if (std::string name = c->cache.erase(c->key); !name.empty() && stale.deallocate_old)
                c->to_deallocate.push_back(std::move(name));
        }
        if (stale.retry) {
            retried = true;
            if (!send()) return broke();
            return flush();
        }
        if (!first_error) c->clear_diagnostics();
        finish(first_error);
    }
};

}  // namespace

namespace detail {

// A busy or closed connection fails at once; the first step runs after the initiating call returns.
void trace_statement(connection::impl& c, std::string_view sql, std::size_t parameters,
                     std::chrono::steady_clock::time_point started, const result* r, const error_code& ec,
                     bool pool_statement) noexcept {
    try {
        if (c.trace_host.empty() && c.conn) {
            const char* h = PQhost(c.conn);
            const char* port = PQport(c.conn);
            c.trace_host = std::string(h ? h : "") + ":" + (port ? port : "");
        }
        statement_trace t;
        t.sql = sql;
        t.parameters = parameters;
        t.duration = std::chrono::steady_clock::now() - started;
        if (r) t.rows = r->rows() > 0 ? r->rows() : r->affected_rows();
        t.error = ec;
        if (ec) t.message = c.diag.message.empty() ? std::string_view() : std::string_view(c.diag.message);
        t.host = c.trace_host;
        t.backend_pid = c.conn ? PQbackendPID(c.conn) : 0;
        t.pool_statement = pool_statement;
        c.tracer->on_statement(t);
    } catch (...) {  // a tracer must not throw; nothing of the statement's outcome depends on it
    }
}

namespace {

void start(const std::shared_ptr<connection::impl>& i, std::string sql, std::optional<params> p,
           query_handler handler, asio::any_io_executor handler_ex, bool pool_statement,
           lease<connection>* borrowed, respool::diagnostics* diag) {
    auto& c = *i;
    auto refuse = [&](error_code ec) {  // before anything was sent
        if (borrowed) give_back(*borrowed, diag, ec);
        complete(c.ex, std::move(handler), ec, result{});
    };
    if (c.busy) return refuse(error::busy);
    if (c.server_fatal) {  // the server ended the session while it was idle (see alive_nowait)
        c.finish();
        return refuse(error::connection_broken);
    }
    if (!c.conn || PQstatus(c.conn) != CONNECTION_OK) return refuse(error::not_connected);
    auto op = std::make_shared<query_op>(i, std::move(handler), std::move(handler_ex), std::move(sql),
                                         std::move(p), pool_statement);
    if (borrowed) {
        op->borrowed = std::move(*borrowed);
        op->diag = diag;
    }
    begin_statement(c, op);
    if (op->send())
        op->flush();  // the handler is posted should the query end now
    else if (op->refused)
        op->finish(error::unsupported_statement);  // nothing was sent: the connection stays as it was
    else
        op->broke();
    op->initiating = false;
}

}  // namespace

void start_query(const std::shared_ptr<connection::impl>& i, std::string sql, std::optional<params> p,
                 query_handler handler, asio::any_io_executor handler_ex, bool pool_statement) {
    start(i, std::move(sql), std::move(p), std::move(handler), std::move(handler_ex), pool_statement, nullptr,
          nullptr);
}

void start_query_on_lease(lease<connection> l, std::string sql, std::optional<params> p,
                          respool::diagnostics* diag, query_handler handler,
                          asio::any_io_executor handler_ex) {
    const auto i = connection_access::impl_of(*l);  // a copy: the lease moves into the operation
    start(i, std::move(sql), std::move(p), std::move(handler), std::move(handler_ex), false, &l, diag);
}

}  // namespace detail

}  // namespace respool::pg
