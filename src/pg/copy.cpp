// COPY on a connection and through a pool (respool/pg/copy.hpp): the statement is sent with the simple
// protocol, then the COPY sub-protocol runs, every wait an Asio wait on libpq's socket (the connection
// is nonblocking). COPY in: rows encoded into chunks of about 64 KiB, each queued with PQputCopyData,
// the socket's writability awaited whenever libpq's buffer is full. COPY out: each PQgetCopyData piece
// handed to the sink as it arrives. Both are ended early the same way by a deadline, an Asio
// cancellation or the caller's code throwing: COPY in sends CopyFail (the server rolls it back), COPY
// out asks the server to cancel and drops what still arrives; the connection is drained before it is
// handed on, or closed when the server does not end the COPY within the cancel drain limit.
#include "cancel_request.hpp"
#include "connection_impl.hpp"
#include "copy_encode.hpp"
#include "wire_access.hpp"

#include <respool/pg/pool.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cctype>
#include <memory>
#include <utility>

namespace asio = boost::asio;

namespace respool::pg {

using copy_handler = asio::any_completion_handler<void(error_code, std::uint64_t)>;

namespace detail {

std::string copy_in_statement(std::string_view target, std::string_view columns, copy_format f) {
    std::string sql = "COPY ";
    sql += target;
    sql += columns;
    sql += " FROM STDIN";
    if (f == copy_format::binary) sql += " (FORMAT binary)";
    return sql;
}

namespace {
// A query rather than a table: its first word is one that starts a query.
bool is_query(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    if (!s.empty() && s.front() == '(') return true;
    std::string word;
    for (const char ch : s) {
        if (!std::isalpha(static_cast<unsigned char>(ch))) break;
        word.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
    }
    return word == "select" || word == "with" || word == "values" || word == "table";
}
}  // namespace

std::string copy_out_statement(std::string_view query_or_table, copy_format f) {
    std::string sql = "COPY ";
    if (is_query(query_or_table)) {
        sql += '(';
        sql += query_or_table;
        sql += ')';
    } else {
        sql += query_or_table;
    }
    sql += " TO STDOUT";
    if (f == copy_format::binary) sql += " (FORMAT binary)";
    return sql;
}

}  // namespace detail

namespace {

// About this much encoded data goes into each PQputCopyData call.
constexpr std::size_t chunk_bytes = 64 * 1024;
// Chunks (or pieces out) handled before the event loop gets a turn when the socket never pushes back.
constexpr int turns_before_yield = 16;

bool is_sqlstate(const error_code& ec, const char* s) {
    return ec == sqlstate_error(s);
}

struct copy_op : std::enable_shared_from_this<copy_op> {
    enum class phase { starting, streaming, reading };

    copy_op(std::shared_ptr<connection::impl> i, copy_handler h, std::string s, copy_options opt)
        : c(std::move(i)), handler(std::move(h)), sql(std::move(s)), o(opt) {
        if (c->tracer) started = std::chrono::steady_clock::now();
    }
    ~copy_op() {
        if (box) box->close();
        if (!done && c->abort_current_of == this) {
            c->abort_current = nullptr;
            c->abort_current_of = nullptr;
        }
    }

    std::shared_ptr<connection::impl> c;
    copy_handler handler;
    std::string sql;
    copy_options o;
    std::shared_ptr<detail::copy_rows> rows;  // COPY in
    detail::copy_sink sink;                   // COPY out
    phase at = phase::starting;
    std::string chunk;
    params row;
    bool source_done = false;
    bool end_sent = false;
    bool reply_read = false;
    result out;
    error_code first_error;
    error_code cancel_reason;
    std::string abort_what;  // the caller's exception, for the diagnostics
    bool done = false;
    bool initiating = true;
    std::shared_ptr<detail::cancel_mailbox> box;
    std::chrono::steady_clock::time_point started;

    [[nodiscard]] bool copy_in() const noexcept { return rows != nullptr; }

    void finish(error_code ec) {
        if (done) return;
        done = true;
        if (box) box->close();
        c->stmt_timer.cancel();
        auto slot = handler.get_cancellation_slot();
        if (slot.is_connected()) slot.clear();
        // The server's answer to the CopyFail or the cancel request (57014), or a connection closed
        // because it did not drain: the caller sees why the COPY was ended.
        // A COPY out that ended before the cancel reached the server still lost the pieces dropped since.
        if (cancel_reason) c->timer.cancel();
        if (cancel_reason && (!ec || is_sqlstate(ec, "57014") || ec == error::connection_broken))
            ec = cancel_reason;
        if (ec && ec == cancel_reason && !abort_what.empty()) c->client_error(abort_what);
        if (!ec) c->clear_diagnostics();
        const std::uint64_t n = ec ? 0 : out.affected_rows();
        if (ec) out = result{};
        if (c->tracer) detail::trace_statement(*c, sql, 0, started, ec ? nullptr : &out, ec, false);
        c->op_ended();
        if (initiating)
            detail::complete(c->ex, std::move(handler), ec, n);
        else
            detail::complete_here(*c, std::move(handler), {}, ec, n);
    }

    void broke() {
        if (done) return;
        c->client_error(c->conn ? PQerrorMessage(c->conn) : "connection closed");
        c->finish();
        finish(error::connection_broken);
    }

    // Ends the COPY early for `reason` (statement_timeout, operation_aborted, copy_aborted). COPY in
    // while rows are being sent: CopyFail at the next step. Otherwise (COPY out, a COPY in the server
    // has not begun, behind a lock say, or one whose data is all sent and still being stored): a
    // cancel request, whose return the operation waits for. Past the cancel drain limit the
    // connection is closed.
    void request_cancel(error_code reason, std::string what = {}) {
        if (done || cancel_reason || !c->conn) return;
        cancel_reason = reason;
        abort_what = std::move(what);
        bool sent = true;
        if (!copy_in() || at != phase::streaming) {
            box = std::make_shared<detail::cancel_mailbox>();
            box->set_on_return([weak = std::weak_ptr<copy_op>(shared_from_this())] {
                if (auto self = weak.lock(); self && !self->done && self->reply_read && !self->box->busy())
                    self->finish(self->first_error);
            });
            sent = detail::send_cancel_request(c->conn, box, c->ex);
        }
        c->stmt_timer.expires_after(sent ? c->cancel_drain_limit
                                         : std::chrono::steady_clock::duration::zero());
        c->stmt_timer.async_wait(
            [weak = std::weak_ptr<copy_op>(shared_from_this())](boost::system::error_code ec) {
                auto self = weak.lock();
                if (ec || !self || self->done) return;
                self->c->client_error("the server did not end the cancelled COPY");
                self->c->finish();
                self->finish(error::connection_broken);
            });
    }

    bool send() {
        const std::string begin_sql = std::exchange(c->deferred_begin, {});
        const std::string text = begin_sql.empty() ? sql : begin_sql + ";\n" + sql;
        return PQsendQuery(c->conn, text.c_str()) != 0;
    }

    template <class Next>
    void wait(asio::socket_base::wait_type w, Next next) {
        c->sock.async_wait(w, [self = shared_from_this(), next](boost::system::error_code ec) {
            if (self->done) return;
            if (ec || !self->c->conn) return self->broke();
            if (!PQconsumeInput(self->c->conn)) return self->broke();
            (self.get()->*next)();
        });
    }
    void yield(void (copy_op::*next)()) {
        asio::post(c->ex, [self = shared_from_this(), next] {
            if (!self->done) (self.get()->*next)();
        });
    }

    void flush_then_read() {
        const int f = PQflush(c->conn);
        if (f < 0) return broke();
        if (f == 0) return read();
        wait(asio::socket_base::wait_write, &copy_op::flush_then_read);
    }

    // The results: up to the COPY's start (COPY_IN / COPY_OUT), or, after it, its end.
    void read() {
        PGconn* pc = c->conn;
        for (;;) {
            if (PQisBusy(pc)) return wait(asio::socket_base::wait_read, &copy_op::read);
            PGresult* r = PQgetResult(pc);
            if (!r) return conclude();
            const ExecStatusType st = PQresultStatus(r);
            switch (st) {
            case PGRES_COPY_IN:
            case PGRES_COPY_OUT:
                PQclear(r);  // returned again at every call while the COPY runs: never loop on it
                if ((st == PGRES_COPY_IN) != copy_in()) return unexpected_copy(st);
                at = phase::streaming;
                if (copy_in()) {
                    detail::copy_header(o.format, chunk);
                    return pump();
                }
                return drain_out();
            case PGRES_COMMAND_OK:
                if (at != phase::starting) {
                    c->track_result(r);
                    out = result_access::adopt(r);  // "COPY n"
                    continue;
                }
                break;  // a deferred BEGIN's
            case PGRES_FATAL_ERROR:
            case PGRES_NONFATAL_ERROR:
                if (!first_error) {
                    c->server_error(r);
                    first_error = c->diag.sqlstate.empty() ? error_code(error::connection_broken)
                                                           : sqlstate_error(c->diag.sqlstate);
                }
                break;
            case PGRES_COPY_BOTH:
            case PGRES_BAD_RESPONSE:
                PQclear(r);
                c->client_error("the server's reply to COPY could not be understood");
                c->finish();
                return finish(error::connection_broken);
            default: break;
            }
            PQclear(r);
        }
    }

    // The statement the caller wrote turned into the other direction's COPY (the target named a
    // query, say): a COPY in is ended with CopyFail; a COPY out cannot be refused, the connection closed.
    void unexpected_copy(ExecStatusType st) {
        first_error = error::unsupported_statement;
        c->client_error(copy_in() ? "the statement is a COPY ... TO STDOUT, not a COPY in"
                                  : "the statement is a COPY ... FROM STDIN, not a COPY out");
        const std::string words = c->diag.message;
        if (st == PGRES_COPY_IN && PQputCopyEnd(c->conn, "respool: not a COPY in") == 1) {
            at = phase::reading;
            return flush_then_read();
        }
        c->finish();
        c->client_error(words);
        finish(error::unsupported_statement);
    }

    // COPY in: fills and queues chunks while libpq's buffer takes them; CopyDone (or CopyFail) at the end.
    void pump() {
        PGconn* pc = c->conn;
        for (int turn = 0; turn < turns_before_yield; ++turn) {
            if (cancel_reason && !end_sent) {
                chunk.clear();  // not queued yet (PQputCopyData queues all of it or nothing)
                const std::string why =
                    "respool: " + (abort_what.empty() ? cancel_reason.message() : abort_what);
                const int rc = PQputCopyEnd(pc, why.c_str());
                if (rc < 0) return broke();
                if (rc == 0) return wait(asio::socket_base::wait_write, &copy_op::pump);
                end_sent = true;
            }
            if (!chunk.empty()) {
                const int rc = PQputCopyData(pc, chunk.data(), static_cast<int>(chunk.size()));
                if (rc < 0) return broke();
                if (rc == 0) return wait(asio::socket_base::wait_write, &copy_op::pump);
                chunk.clear();
            }
            if (source_done && !end_sent) {
                const int rc = PQputCopyEnd(pc, nullptr);
                if (rc < 0) return broke();
                if (rc == 0) return wait(asio::socket_base::wait_write, &copy_op::pump);
                end_sent = true;
            }
            if (end_sent) {
                at = phase::reading;
                return flush_then_read();
            }
            const int f = PQflush(pc);
            if (f < 0) return broke();
            if (f == 1) return wait(asio::socket_base::wait_write, &copy_op::pump);
            fill();
        }
        yield(&copy_op::pump);
    }

    // The next chunk from the rows; the caller's exception ends the COPY.
    void fill() {
        try {
            while (chunk.size() < chunk_bytes) {
                row.clear();  // the same block for every row
                if (!rows->next(row)) {
                    source_done = true;
                    detail::copy_trailer(o.format, chunk);
                    return;
                }
                detail::encode_copy_row(row, o.format, chunk);
            }
        } catch (const std::exception& e) {
            chunk.clear();
            request_cancel(error::copy_aborted, e.what());
        } catch (...) {
            chunk.clear();
            request_cancel(error::copy_aborted,
                           "the rows' range threw an exception that is no std::exception");
        }
    }

    // COPY out: each piece to the sink (dropped once the COPY is being ended), until the end.
    void drain_out() {
        PGconn* pc = c->conn;
        for (int turn = 0; turn < turns_before_yield * 64; ++turn) {
            char* buf = nullptr;
            const int n = PQgetCopyData(pc, &buf, 1);
            if (n == 0) return wait(asio::socket_base::wait_read, &copy_op::drain_out);
            if (n == -1) {
                at = phase::reading;
                return read();
            }
            if (n < 0) return broke();
            const std::unique_ptr<char, void (*)(void*)> piece(buf, PQfreemem);
            if (cancel_reason) continue;
            try {
                sink(std::string_view(buf, static_cast<std::size_t>(n)));
            } catch (const std::exception& e) {
                request_cancel(error::copy_aborted, e.what());
            } catch (...) {
                request_cancel(error::copy_aborted, "the sink threw an exception that is no std::exception");
            }
            if (done) return;  // no cancel request could be sent: closed
        }
        yield(&copy_op::drain_out);
    }

    // The whole reply is read; a cancel request still out holds the end back (it could hit the next
    // statement), up to the drain limit.
    void conclude() {
        if (PQstatus(c->conn) == CONNECTION_BAD) return broke();
        c->collect_notifications();
        reply_read = true;
        if (box && box->busy()) return detail::hold_for_cancel_return(shared_from_this());
        finish(first_error);
    }
};

void start_copy(const std::shared_ptr<connection::impl>& i, std::string sql,
                std::shared_ptr<detail::copy_rows> rows, detail::copy_sink sink, copy_options opt,
                copy_handler handler) {
    auto& c = *i;
    if (c.busy) return detail::complete(c.ex, std::move(handler), error_code(error::busy), std::uint64_t{0});
    if (c.server_fatal) {
        c.finish();
        return detail::complete(c.ex, std::move(handler), error_code(error::connection_broken),
                                std::uint64_t{0});
    }
    if (!c.conn || PQstatus(c.conn) != CONNECTION_OK)
        return detail::complete(c.ex, std::move(handler), error_code(error::not_connected), std::uint64_t{0});
    auto op = std::make_shared<copy_op>(i, std::move(handler), std::move(sql), opt);
    op->rows = std::move(rows);
    op->sink = std::move(sink);
    detail::begin_statement(c, op);
    if (op->send())
        op->flush_then_read();
    else
        op->broke();
    op->initiating = false;
}

}  // namespace

void connection::start_copy_in(std::string sql, std::unique_ptr<detail::copy_rows> rows, copy_options o,
                               copy_handler handler) {
    start_copy(impl_, std::move(sql), std::move(rows), {}, o, std::move(handler));
}

void connection::start_copy_out(std::string sql, detail::copy_sink sink, copy_options o,
                                copy_handler handler) {
    start_copy(impl_, std::move(sql), nullptr, std::move(sink), o, std::move(handler));
}

// ---- through a pool ---------------------------------------------------------------------------

namespace {

using copy_outcome = std::pair<error_code, std::uint64_t>;

// On a borrowed connection; a connection-level failure is thrown so that the lease poisons it.
asio::awaitable<copy_outcome> copy_on_lease(std::shared_ptr<detail::pool_state> s, std::string sql,
                                            std::shared_ptr<detail::copy_rows> rows, detail::copy_sink sink,
                                            copy_options o) {
    if (o.diag) o.diag->clear();
    lease<connection> l = co_await detail::acquire(std::move(s));
    auto fn = [&](connection& c) -> asio::awaitable<copy_outcome> {
        const std::shared_ptr<connection::impl>& i = detail::connection_access::impl_of(c);
        auto init = [&](auto h) {
            start_copy(i, std::move(sql), std::move(rows), std::move(sink), o, std::move(h));
        };
        auto token = asio::as_tuple(asio::use_awaitable);
        auto [ec, n] =
            co_await asio::async_initiate<decltype(token), void(error_code, std::uint64_t)>(init, token);
        if (ec && o.diag) {
            const diagnostics d = c.last_error();
            o.diag->message = describe(ec, d);
            o.diag->error = std::make_exception_ptr(error_with_diagnostics(ec, d));
        }
        if (ec == condition::connection_broken) throw boost::system::system_error(ec, c.last_error().message);
        co_return copy_outcome{ec, n};
    };
    co_return co_await respool::detail::db::with_lease<copy_outcome>(std::move(l), fn, &detail::settle);
}

}  // namespace

void pool::start_copy(std::string sql, std::unique_ptr<detail::copy_rows> rows, detail::copy_sink sink,
                      copy_options o, copy_handler handler) {
    auto slot = asio::get_associated_cancellation_slot(handler);
    std::shared_ptr<detail::copy_rows> shared(std::move(rows));
    asio::co_spawn(
        get_executor(), copy_on_lease(state_.shared(), std::move(sql), std::move(shared), std::move(sink), o),
        asio::bind_cancellation_slot(
            slot, [h = std::move(handler), diag = o.diag](std::exception_ptr e, copy_outcome r) mutable {
                if (e) {  // a failed borrow, or a connection-level failure (then already in diag)
                    r = {respool::errc::create_failed, 0};
                    try {
                        std::rethrow_exception(e);
                    } catch (const boost::system::system_error& x) {
                        r.first = x.code();
                        if (diag && diag->message.empty()) {
                            diag->message = x.what();
                            diag->error = e;
                        }
                    } catch (...) {
                    }
                }
                std::move(h)(r.first, r.second);
            }));
}

}  // namespace respool::pg
