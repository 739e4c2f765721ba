// Pipelined pool statements on one connection: see pipeline.hpp.
//
// What is on the wire, per statement: [Parse] Bind/Execute Sync, plus, after a statement whose Parse
// made the cache evict another, DEALLOCATE Sync. The replies are read in that order; `parts` says
// which reply belongs to which message. Statements in flight that use a name whose Parse is itself
// still in flight rely on it: when that Parse fails they report its error rather than the server's
// "prepared statement does not exist".
#include "pipeline.hpp"

#include "statement_text.hpp"
#include "wire_access.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace asio = boost::asio;

namespace respool::pg::detail {

namespace {

bool is_sqlstate(const error_code& ec, const char* s) {
    return ec == sqlstate_error(s);
}

// The statement's first keyword, upper-cased (leading blanks and opening parentheses skipped).
std::string first_keyword(std::string_view sql) {
    std::size_t i = 0;
    while (i < sql.size() && (std::isspace(static_cast<unsigned char>(sql[i])) || sql[i] == '(')) ++i;
    std::string word;
    while (i < sql.size() && std::isalpha(static_cast<unsigned char>(sql[i])) && word.size() < 8)
        word.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(sql[i++]))));
    return word;
}

}  // namespace

bool pipelinable(std::string_view sql) noexcept {
    try {
        const std::string k = first_keyword(sql);
        const bool rows = k == "SELECT" || k == "INSERT" || k == "UPDATE" || k == "DELETE" || k == "WITH" ||
                          k == "VALUES" || k == "TABLE";
        return rows && !scan_statement(sql).session_effects;
    } catch (...) {
        return false;
    }
}

pipeline::pipeline(std::shared_ptr<connection::impl> c, std::chrono::steady_clock::duration statement_timeout)
    : c_(std::move(c)), statement_timeout_(statement_timeout), deadline_timer_(c_->ex) {}

pipeline::~pipeline() {
    box_->close();
}

void pipeline::submit(std::string sql, params p, query_handler h, respool::diagnostics* diag, preparation how,
                      asio::any_io_executor handler_ex) {
    if (broken_ || !c_->conn)
        return complete(c_->ex, std::move(h), error_code(error::connection_broken), result{});
    if (statements_.empty()) {  // the connection comes in idle (the pool lends it so) or back from idle
        // (`h` is not queued yet: broke() cannot complete it, so it completes here.)
        if (PQpipelineStatus(c_->conn) == PQ_PIPELINE_OFF && !PQenterPipelineMode(c_->conn)) {
            broke("could not enter pipeline mode");
            return complete(c_->ex, std::move(h), error_code(error::connection_broken), result{});
        }
        c_->busy = true;
        idle_posted_ = false;
        if (!c_->to_deallocate.empty() && !send_deallocate(std::exchange(c_->to_deallocate, {}))) {
            broke(PQerrorMessage(c_->conn));
            return complete(c_->ex, std::move(h), error_code(error::connection_broken), result{});
        }
    }
    auto s = std::make_shared<statement>(std::move(sql), std::move(p), std::move(h));
    s->handler_ex = std::move(handler_ex);
    s->diag = diag;
    s->how = how;
    if (c_->tracer) s->started = std::chrono::steady_clock::now();
    auto slot = s->handler.get_cancellation_slot();
    if (slot.is_connected())
        slot.assign(
            [weak_self = weak_from_this(), weak = std::weak_ptr<statement>(s)](asio::cancellation_type) {
                auto self = weak_self.lock();
                auto st = weak.lock();
                if (self && st) self->abandon(st, asio::error::operation_aborted);
            });
    statements_.push_back(s);
    ++callers_;
    if (!send(*s)) return broke(PQerrorMessage(c_->conn));
    flush();
    if (statements_.size() == 1) watch_head();
    read();
}

// Queues one statement's messages in libpq's buffer (PQpipelineSync sends them).
bool pipeline::send(statement& s) {
    PGconn* pc = c_->conn;
    const params_access a(s.p);
    const int n = static_cast<int>(s.p.size());
    s.parts.clear();
    s.at = 0;
    s.out = {};
    s.first_error = {};
    if (s.how == preparation::unnamed || c_->mode == statement_mode::unnamed || c_->cache.capacity() == 0) {
        if (!PQsendQueryParams(pc, s.sql.c_str(), n, a.types(), a.values.data(), a.lengths(), a.formats(), 0))
            return false;
        s.parts.push_back(part::rows);
    } else {
        s.key.assign(s.sql);
        s.key.push_back('\0');
        s.key.append(reinterpret_cast<const char*>(a.types()), s.p.size() * sizeof(Oid));
        std::string name;
        std::string evicted;
        if (const prepared* cached = c_->cache.find(s.key)) {
            name = cached->name;
            if (auto it = parsing_.find(name); it != parsing_.end()) s.relies = it->second;
        } else {
            evicted = c_->cache.make_room();
            name = c_->cache.next_name();
            if (!PQsendPrepare(pc, name.c_str(), s.sql.c_str(), n, a.types())) return false;
            s.parts.push_back(part::prepare);
            // In the cache from now on, so the statements sent behind it use this Parse, not one of
            // their own (which would leave a second copy on the server).
            c_->cache.insert(s.key, {name, false});
            s.preparing = name;
            s.relies = parsing_[name] = std::make_shared<prepare_outcome>();
        }
        if (!PQsendQueryPrepared(pc, name.c_str(), n, a.values.data(), a.lengths(), a.formats(), 0))
            return false;
        s.parts.push_back(part::rows);
        if (!evicted.empty()) {  // after this statement's Sync: nothing sent before still needs it
            if (!PQpipelineSync(pc)) return false;
            s.parts.push_back(part::sync);
            return send_deallocate({std::move(evicted)});
        }
    }
    if (!PQpipelineSync(pc)) return false;
    s.parts.push_back(part::sync);
    return true;
}

// DEALLOCATE for statements the cache let go, as a statement of the pipeline's own (no caller).
bool pipeline::send_deallocate(std::vector<std::string> names) {
    auto s = std::make_shared<statement>();
    for (const std::string& name : names) {
        const std::string sql = "DEALLOCATE " + name;
        if (!PQsendQueryParams(c_->conn, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0)) return false;
        s->parts.push_back(part::deallocate);
    }
    if (!PQpipelineSync(c_->conn)) return false;
    s->parts.push_back(part::sync);
    s->deallocating = std::move(names);
    statements_.push_back(std::move(s));
    return true;
}

void pipeline::flush() {
    if (flushing_ || broken_) return;
    const int f = PQflush(c_->conn);
    if (f < 0) return broke(PQerrorMessage(c_->conn));
    if (f == 0) return;
    // The server may be answering while we send: read while waiting to write, or both could block.
    wait(asio::socket_base::wait_write, flushing_);
}

// One wait on libpq's socket (`out` marks it under way). Ready, whatever arrived is read in, then
// both sides go on: the rest of the statements are sent, the replies read.
void pipeline::wait(asio::socket_base::wait_type w, bool& out) {
    out = true;
    auto ready = [self = shared_from_this(), &out](boost::system::error_code ec) {
        out = false;
        if (self->broken_) return;
        if (connection::impl::socket_failed(ec)) return self->broke(self->c_->wait_failure(ec).c_str());
        if (ec || !self->c_->conn || !PQconsumeInput(self->c_->conn))
            return self->broke("the connection closed");
        self->c_->collect_notifications();
        self->flush();
        self->read();
    };
    if (w == asio::socket_base::wait_read)
        c_->wait_readable(std::move(ready));
    else
        c_->sock.async_wait(w, std::move(ready));
}

void pipeline::read() {
    // A caller completed below may submit its next statement at once: that submit's read() returns
    // here, and this loop picks its reply up (no recursion).
    if (in_read_) return;
    in_read_ = true;
    read_replies();
    in_read_ = false;
    if (!broken_ && PQstatus(c_->conn) == CONNECTION_BAD) return broke("the connection closed");
    maybe_idle();
}

void pipeline::read_replies() {
    while (!broken_ && !statements_.empty()) {
        if (PQisBusy(c_->conn)) {
            if (!reading_) wait(asio::socket_base::wait_read, reading_);
            return;
        }
        PGresult* r = PQgetResult(c_->conn);
        statement& s = *statements_.front();
        const part now = s.parts[s.at];
        if (now == part::sync) {  // one PIPELINE_SYNC result, with no NULL after it
            if (!r) {
                if (PQstatus(c_->conn) == CONNECTION_BAD || ++nulls_at_sync_ > 2)
                    return broke("no Sync answer");
                continue;
            }
            nulls_at_sync_ = 0;
            const bool synced = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
            PQclear(r);
            if (synced && ++s.at == s.parts.size()) complete_front();
            continue;
        }
        if (!r) {  // the end of this part's results
            ++s.at;
            continue;
        }
        take(s, now, r);
    }
}

// Looks at one result; keeps the rows of the caller's statement, frees the rest.
void pipeline::take(statement& s, part now, PGresult* r) {
    switch (PQresultStatus(r)) {
    case PGRES_TUPLES_OK:
    case PGRES_COMMAND_OK:
    case PGRES_EMPTY_QUERY:
        if (now == part::prepare) {
            parsing_.erase(s.preparing);
        } else if (now == part::rows) {
            c_->track_result(r);
            if (!s.first_error) {
                s.out = result_access::adopt(r);
                return;
            }
        }
        break;
    case PGRES_FATAL_ERROR:
    case PGRES_NONFATAL_ERROR: {
        const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        if (now == part::deallocate) {
            if (!state || std::strcmp(state, "26000") != 0)
                c_->to_deallocate.push_back(s.deallocating[s.at]);  // still on the server: next time
            break;
        }
        const error_code ec = state ? sqlstate_error(state) : error_code(error::connection_broken);
        if (now == part::prepare) {  // forget it, and tell the statements that rely on it why
            if (const prepared* p = c_->cache.find(s.key); p && p->name == s.preparing)
                c_->cache.erase(s.key);
            if (s.relies) {
                s.relies->ec = ec;
                const char* m = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
                s.relies->message = m ? m : "";
            }
            parsing_.erase(s.preparing);
        }
        if (!s.first_error) {
            s.first_error = ec;
            c_->server_error(r);
            if (s.diag) s.words = c_->diag;
        }
        break;
    }
    case PGRES_PIPELINE_ABORTED:
        if (now == part::deallocate) c_->to_deallocate.push_back(s.deallocating[s.at]);
        if (now == part::prepare) parsing_.erase(s.preparing);
        break;
    default:  // COPY (libpq would return it at every call) or a reply libpq could not understand
        PQclear(r);
        return broke("an unexpected reply in a pipeline");
    }
    PQclear(r);
}

// The reply of the statement at the front is complete.
void pipeline::complete_front() {
    statement_ptr s = std::move(statements_.front());
    statements_.pop_front();
    if (!s->internal()) --callers_;
    watch_head();
    if (s->internal()) return;
    error_code ec = s->first_error;
    if (is_sqlstate(ec, "26000") && s->relies && s->relies->ec) ec = s->relies->ec;  // its Parse failed
    if (is_sqlstate(ec, "57014") && !s->cancel_sent && !s->retried && s->handler && c_->conn &&
        PQtransactionStatus(c_->conn) == PQTRANS_IDLE) {
        // A cancel request meant for the statement before it reached this one (the server had moved
        // on). A cancelled statement in its own implicit transaction left nothing behind: run it again.
        // Not inside a transaction block (a batch in a transaction): the cancel aborted the
        // transaction, and the statement's own error is what the caller must see.
        s->retried = true;
        s->deadline = std::chrono::steady_clock::time_point::max();  // a fresh one when it runs again
        statements_.push_back(s);
        ++callers_;
        if (!send(*s)) return broke(PQerrorMessage(c_->conn));
        flush();
        return;
    }
    if (!s->handler) return;  // completed early; its reply is dropped
    auto slot = s->handler.get_cancellation_slot();
    if (slot.is_connected()) slot.clear();
    if (ec) s->out = result{};
    if (ec) c_->track_error(c_->diag.sqlstate);
    if (ec && s->diag) {
        diagnostics words = ec == s->first_error ? s->words : diagnostics{};
        if (ec != s->first_error && s->relies) {  // its Parse failed: the Parse's words
            words.sqlstate = sqlstate_of(ec);
            words.message = masked(s->relies->message);
        }
        s->diag->message = describe(ec, words);
        s->diag->error = std::make_exception_ptr(error_with_diagnostics(ec, std::move(words)));
    }
    if (c_->tracer) trace_statement(*c_, s->sql, s->p.size(), s->started, ec ? nullptr : &s->out, ec, false);
    complete_here(*c_, std::move(s->handler), std::exchange(s->handler_ex, {}), ec, std::move(s->out));
}

// Completes a statement before its reply (cancelled, or past its deadline); the reply is read and
// dropped when it comes. When the statement is the one the server runs now, a cancel request stops it
// so that those behind it do not wait for it.
void pipeline::abandon(const statement_ptr& s, error_code why) {
    if (!s->handler) return;
    s->early = why;
    auto slot = s->handler.get_cancellation_slot();
    if (slot.is_connected()) slot.clear();
    if (c_->tracer) trace_statement(*c_, s->sql, s->p.size(), s->started, nullptr, why, false);
    complete(c_->ex, std::move(s->handler), why, result{});  // leaves s->handler empty
    watch_head();
}

// The statement at the front is the one the server runs (or is about to). Its deadline starts now
// (statement_timeout is the statement's own run, not its wait behind others'); when it was completed
// early, the server is asked to stop it.
void pipeline::watch_head() {
    if (broken_ || statements_.empty()) return;
    statement& head = *statements_.front();
    if (head.handler && statement_timeout_ > std::chrono::steady_clock::duration::zero() &&
        head.deadline == std::chrono::steady_clock::time_point::max()) {
        head.deadline = std::chrono::steady_clock::now() + statement_timeout_;
        arm_deadline();
    }
    if (head.handler || head.internal() || head.cancel_sent || !c_->conn) return;
    head.cancel_sent = true;
    // Holds the pipeline until the request returns (its owner may have let go of it meanwhile: the
    // connection must not be handed on before); cleared once idle.
    box_->set_on_return([self = shared_from_this()] { self->maybe_idle(); });
    if (!send_cancel_request(c_->conn, box_, c_->ex)) broke("could not send a cancel request");
}

// Only the head has a deadline (see watch_head): the timer is for it.
void pipeline::arm_deadline() {
    deadline_timer_.expires_at(statements_.front()->deadline);
    deadline_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
        if (auto self = weak.lock(); self && !ec) self->on_deadline();
    });
}

void pipeline::on_deadline() {
    if (statements_.empty()) return;
    const statement_ptr head = statements_.front();
    if (head->handler && head->deadline <= std::chrono::steady_clock::now())
        abandon(head, error::statement_timeout);  // and the server is asked to stop it
}

// Nothing in flight and no cancel request out: the connection leaves pipeline mode and is idle.
void pipeline::maybe_idle() {
    if (broken_ || !statements_.empty() || idle_posted_ || box_->busy()) return;
    if (!PQexitPipelineMode(c_->conn)) return broke(PQerrorMessage(c_->conn));
    deadline_timer_.cancel();
    box_->set_on_return(nullptr);  // (it held the pipeline)
    idle_posted_ = true;
    c_->busy = false;
    c_->op_ended();
    if (on_idle) asio::post(c_->ex, [cb = on_idle] { cb(false); });
}

// The connection is unusable: every statement fails with connection_broken.
void pipeline::broke(const char* why) {
    if (broken_) return;
    broken_ = true;
    c_->client_error(why && *why ? why : "connection closed");
    c_->finish();
    deadline_timer_.cancel();
    box_->close();
    auto all = std::move(statements_);
    statements_.clear();
    callers_ = 0;
    for (const statement_ptr& s : all)
        if (s->handler) {
            auto slot = s->handler.get_cancellation_slot();
            if (slot.is_connected()) slot.clear();
            if (c_->tracer)
                trace_statement(*c_, s->sql, s->p.size(), s->started, nullptr, error::connection_broken,
                                false);
            complete(c_->ex, std::move(s->handler), error_code(error::connection_broken), result{});
        }
    c_->busy = false;
    c_->op_ended();
    if (on_idle) asio::post(c_->ex, [cb = on_idle] { cb(true); });
}

}  // namespace respool::pg::detail
