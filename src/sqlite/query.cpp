// sqlite::connection::async_query: one statement through the statement cache (with or without bound
// parameters), or a script of several; the reader's refusal of statements that may write; the
// statement deadline and the mapping of an interrupt to what stopped it.
#include "connection_impl.hpp"
#include "result_builder.hpp"
#include "statement_run.hpp"

#include <boost/asio/error.hpp>

#include <cctype>

namespace asio = boost::asio;

namespace respool::sqlite {

namespace {

// Whether `tail` (what prepare left of the text) holds anything but blanks and semicolons. A comment
// counts as something: the script path then finds it empty and runs nothing for it.
bool has_more(const char* tail) noexcept {
    for (; tail && *tail; ++tail)
        if (!std::isspace(static_cast<unsigned char>(*tail)) && *tail != ';') return true;
    return false;
}

error_code bind_all(connection::impl& s, ::sqlite3_stmt* st, const params& p) {
    const int expected = ::sqlite3_bind_parameter_count(st);
    if (expected != static_cast<int>(p.size())) {
        s.last = {SQLITE_RANGE,
                  "the statement has " + std::to_string(expected) + " parameters, " +
                      std::to_string(p.size()) + " given",
                  -1};
        return make_error_code(error::parameter_count);
    }
    int i = 1;
    for (const auto& v : p.values()) {
        int rc = SQLITE_OK;
        if (std::holds_alternative<std::monostate>(v))
            rc = ::sqlite3_bind_null(st, i);
        else if (auto* n = std::get_if<std::int64_t>(&v))
            rc = ::sqlite3_bind_int64(st, i, *n);
        else if (auto* d = std::get_if<double>(&v))
            rc = ::sqlite3_bind_double(st, i, *d);
        else if (auto* t = std::get_if<std::string>(&v))  // the params outlive the statement's run
            rc = ::sqlite3_bind_text64(st, i, t->data(), t->size(), SQLITE_STATIC, SQLITE_UTF8);
        else if (auto* b = std::get_if<std::vector<std::byte>>(&v))
            rc = b->empty() ? ::sqlite3_bind_zeroblob(st, i, 0)  // a null pointer would bind NULL
                            : ::sqlite3_bind_blob64(st, i, b->data(), b->size(), SQLITE_STATIC);
        if (rc != SQLITE_OK) return s.fail(rc);
        ++i;
    }
    return {};
}

// What an SQLITE_INTERRUPT means: the caller's cancellation, the deadline, or an interrupt of
// SQLite's own.
error_code interrupted(connection::impl& s, error_code ec) {
    switch (static_cast<stop_reason>(s.stop.load(std::memory_order_relaxed))) {
    case stop_reason::cancelled: return asio::error::operation_aborted;
    case stop_reason::deadline: return make_error_code(error::statement_timeout);
    case stop_reason::none: break;
    }
    return ec;
}

// Steps `st` to the end, collecting its rows; the statement is reset (not busy) afterwards. `effects`:
// what its preparation found it changes in the session (session_state.hpp), counted before it runs.
error_code run(connection::impl& s, ::sqlite3_stmt* st, unsigned effects, result& out) {
    s.session |= effects;
    result_builder rows;
    const auto changes_before = ::sqlite3_total_changes64(s.db);
    int rc;
    while ((rc = ::sqlite3_step(st)) == SQLITE_ROW) rows.add_row(st);
    error_code ec;
    if (rc != SQLITE_DONE) ec = s.fail(rc);
    ::sqlite3_reset(st);
    ::sqlite3_clear_bindings(st);
    if ((rc & 0xff) == SQLITE_INTERRUPT) return interrupted(s, ec);
    if (ec) return ec;
    // sqlite3_changes keeps the last INSERT/UPDATE/DELETE's count: only this statement's counts.
    const bool changed = ::sqlite3_total_changes64(s.db) != changes_before;
    out = rows.finish(st, changed ? static_cast<std::uint64_t>(::sqlite3_changes64(s.db)) : 0,
                      ::sqlite3_last_insert_rowid(s.db));
    return {};
}

// Before anything runs: was the operation cancelled while it waited for a thread?
error_code stopped_early(connection::impl& s) {
    if (s.stop.load(std::memory_order_relaxed) == 0) return {};
    return interrupted(s, from_result_code(SQLITE_INTERRUPT));
}

// sqlite3_prepare_v3, with what the authorizer finds the statement changes in the session in `effects`.
int prepare_watched(connection::impl& s, const char* sql, int size, unsigned flags, ::sqlite3_stmt*& st,
                    const char*& tail, unsigned& effects) {
    s.preparing = true;
    s.prepared_effects = 0;
    const int rc = ::sqlite3_prepare_v3(s.db, sql, size, flags, &st, &tail);
    s.preparing = false;
    effects = s.prepared_effects;
    return rc;
}

// Prepares `sql`'s first statement (from the cache when it is there). `more`: text follows it.
error_code prepare(connection::impl& s, const std::string& sql, ::sqlite3_stmt*& st, bool& cached, bool& more,
                   unsigned& effects) {
    more = false;
    if (const auto* c = s.cache.find(sql)) {
        st = c->stmt;
        effects = c->effects;
        cached = true;
        return {};
    }
    const char* tail = nullptr;
    int rc = prepare_watched(s, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT, st, tail,
                             effects);
    if (rc != SQLITE_OK) {
        if ((rc & 0xff) == SQLITE_INTERRUPT) return interrupted(s, s.fail(rc));
        return s.fail(rc);
    }
    more = has_more(tail);
    cached = !more && st && s.cache.put(sql, st, effects);
    return {};
}

// A script: each statement prepared and run in turn; the last one's rows.
error_code run_script(connection::impl& s, const std::string& sql, result& out) {
    const char* next = sql.data();
    const char* end = sql.data() + sql.size();
    while (next < end) {
        ::sqlite3_stmt* st = nullptr;
        const char* tail = nullptr;
        if (error_code ec = stopped_early(s)) return ec;
        unsigned effects = 0;
        int rc = prepare_watched(s, next, static_cast<int>(end - next), 0, st, tail, effects);
        if (rc != SQLITE_OK) return (rc & 0xff) == SQLITE_INTERRUPT ? interrupted(s, s.fail(rc)) : s.fail(rc);
        next = tail;
        if (!st) continue;  // blanks or a comment
        error_code ec = run(s, st, effects, out);
        ::sqlite3_finalize(st);
        if (ec) return ec;
    }
    return {};
}

error_code query_on_worker(connection::impl& s, const std::string& sql, const params& p, bool bound,
                           result& out) {
    s.has_deadline = s.statement_timeout > std::chrono::steady_clock::duration::zero();
    if (s.has_deadline) s.deadline = std::chrono::steady_clock::now() + s.statement_timeout;
    if (error_code ec = stopped_early(s)) return ec;
    ::sqlite3_stmt* st = nullptr;
    bool cached = false, more = false;
    unsigned effects = 0;
    if (error_code ec = prepare(s, sql, st, cached, more, effects)) return ec;
    if (more) {
        if (!cached && st) ::sqlite3_finalize(st);
        if (bound) {
            s.last = {SQLITE_MISUSE, "bound parameters are for one statement; the text holds several", -1};
            return make_error_code(error::multiple_statements);
        }
        if (s.reader) {
            s.last = {SQLITE_READONLY, "a reader runs one read-only statement at a time, not scripts", -1};
            return make_error_code(error::writes_on_reader);
        }
        return run_script(s, sql, out);
    }
    if (!st) {  // nothing but blanks or a comment
        out = result_builder().finish(nullptr, 0, ::sqlite3_last_insert_rowid(s.db));
        return {};
    }
    error_code ec;
    if (s.reader && !::sqlite3_stmt_readonly(st)) {
        s.last = {SQLITE_READONLY, "a reader connection does not run statements that may write", -1};
        ec = make_error_code(error::writes_on_reader);
    } else if (!(ec = bind_all(s, st, p))) {
        ec = run(s, st, effects, out);
    }
    if (ec) ::sqlite3_clear_bindings(st);
    if (!cached) ::sqlite3_finalize(st);
    return ec;
}

}  // namespace

namespace detail {

namespace {
void trace_statement(connection::impl& s, const std::string& sql, std::size_t parameters,
                     std::chrono::steady_clock::time_point started, const result& out,
                     const error_code& ec) noexcept {
    try {
        statement_trace t;
        t.sql = sql;
        t.parameters = parameters;
        t.duration = std::chrono::steady_clock::now() - started;
        if (!ec) t.rows = out.rows() > 0 ? out.rows() : out.affected_rows();
        t.error = ec;
        if (ec) t.message = s.last.message;
        t.host = s.path;
        s.tracer->on_statement(t);
    } catch (...) {  // a tracer must not throw; nothing of the statement's outcome depends on it
    }
}
}  // namespace

error_code run_statement(connection::impl& s, const std::string& sql, const params& p, bool bound,
                         result& out) {
    std::chrono::steady_clock::time_point started;
    if (s.tracer) started = std::chrono::steady_clock::now();  // no clock read without a tracer
    error_code ec = query_on_worker(s, sql, p, bound, out);
    // A write refused by a reader never ran (the pool sends it to the writer itself): not traced.
    if (s.tracer && ec != error::writes_on_reader)
        trace_statement(s, sql, bound ? p.size() : 0, started, out, ec);
    if (!ec) s.last = {};
    s.has_deadline = false;
    // The deadline was this statement's: the stop it set ends with it, or the next statement of the same
    // job (a group commit's next write, or its re-run after the rollback) would fail at once in
    // stopped_early. A cancellation's stop stays (it is the job's, not the statement's).
    int deadline = static_cast<int>(stop_reason::deadline);
    s.stop.compare_exchange_strong(deadline, static_cast<int>(stop_reason::none), std::memory_order_relaxed);
    return ec;
}

error_code exec_cached(connection::impl& s, const std::string& sql) {
    ::sqlite3_stmt* st = nullptr;
    bool cached = false, more = false;
    unsigned effects = 0;
    if (error_code ec = prepare(s, sql, st, cached, more, effects)) return ec;
    s.session |= effects;
    const int rc = ::sqlite3_step(st);
    error_code ec;
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) ec = s.fail(rc);
    ::sqlite3_reset(st);
    if (!cached) ::sqlite3_finalize(st);
    return ec;
}

}  // namespace detail

void connection::start_query(std::string sql, params p, bool bound, hex_t hex,
                             asio::any_completion_handler<void(error_code, result)> handler) {
    if (!claim(*impl_))
        return complete_now(hex, std::move(handler), make_error_code(error::operation_in_progress), result{});
    if (!impl_->open) {
        release_claim(*impl_);
        return complete_now(hex, std::move(handler), make_error_code(error::not_open), result{});
    }
    offload(impl_, hex, std::move(handler), [sql = std::move(sql), p = std::move(p), bound](impl& s) {
        result out;
        error_code ec = detail::run_statement(s, sql, p, bound, out);
        s.snapshot();
        return std::make_tuple(ec, std::move(out));
    });
}

}  // namespace respool::sqlite
