// sqlite::connection: open (with the pragmas), the progress and busy handlers that make a statement
// stoppable, async_run, the reset on release, close. Statements are in query.cpp.
#include "connection_impl.hpp"
#include "session_state.hpp"

#include <boost/system/system_error.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <thread>

namespace asio = boost::asio;

namespace respool::sqlite {

namespace {

// Called by SQLite every few thousand virtual-machine steps of a statement: non-zero interrupts it.
// Cancellation also calls sqlite3_interrupt, but an interrupt that lands between two statements of
// one operation is forgotten when the next one starts; this handler is what makes it stick.
int on_progress(void* arg) noexcept {
    auto* s = static_cast<connection::impl*>(arg);
    if (s->stop.load(std::memory_order_relaxed) != 0) return 1;
    if (s->has_deadline && std::chrono::steady_clock::now() >= s->deadline) {
        s->stop.store(static_cast<int>(stop_reason::deadline), std::memory_order_relaxed);
        return 1;
    }
    return 0;
}

// SQLite's busy_timeout sleeps too, but cannot be stopped; this one sleeps in short steps on the
// offload thread and gives up (SQLITE_BUSY) at cancellation, at the statement deadline, or after
// busy_timeout. Inside one process the single writer means it only ever waits for other processes.
int on_busy(void* arg, int count) noexcept {
    auto* s = static_cast<connection::impl*>(arg);
    thread_local std::chrono::steady_clock::time_point started;
    const auto now = std::chrono::steady_clock::now();
    if (count == 0) started = now;
    if (s->stop.load(std::memory_order_relaxed) != 0) return 0;
    if (s->has_deadline && now >= s->deadline) return 0;
    if (now - started >= s->busy_timeout) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(1 << std::min(count, 4), 10)));
    return 1;
}

// Only the values SQLite knows go into a pragma's text (the options are not SQL).
std::string checked_pragma_value(const std::string& v, std::initializer_list<const char*> allowed,
                                 const char* name) {
    std::string up = v;
    std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
    for (const char* a : allowed)
        if (up == a) return up;
    throw std::invalid_argument(std::string("respool::sqlite: ") + name + " \"" + v +
                                "\" is not one of SQLite's values");
}

}  // namespace

void install_handlers(connection::impl& s) noexcept {
    ::sqlite3_progress_handler(s.db, 1000, &on_progress, &s);
    ::sqlite3_busy_handler(s.db, &on_busy, &s);  // also what PRAGMA busy_timeout replaced
}

// ---- impl ---------------------------------------------------------------------------------------

connection::impl::~impl() {
    close_now();
}

void connection::impl::interrupt(stop_reason why) noexcept {
    std::lock_guard lock(m);
    if (!running.load(std::memory_order_acquire) || !db) return;
    stop.store(static_cast<int>(why), std::memory_order_relaxed);
    ::sqlite3_interrupt(db);
}

void connection::impl::snapshot() noexcept {
    open = db != nullptr;
    in_txn = db && ::sqlite3_get_autocommit(db) == 0;
    busy_statements = false;
    for (::sqlite3_stmt* st = db ? ::sqlite3_next_stmt(db, nullptr) : nullptr; st;
         st = ::sqlite3_next_stmt(db, st))
        if (::sqlite3_stmt_busy(st)) busy_statements = true;
}

error_code connection::impl::fail(int rc, const std::string& prefix) {
    last.code = db ? ::sqlite3_extended_errcode(db) : rc;
    if (last.code == 0 || (last.code & 0xff) != (rc & 0xff)) last.code = rc;  // a code SQLite did not record
    last.message = prefix + (db ? ::sqlite3_errmsg(db) : ::sqlite3_errstr(rc));
    last.offset = db ? ::sqlite3_error_offset(db) : -1;
    return from_result_code(last.code);
}

void connection::impl::close_now() noexcept {
    std::lock_guard lock(m);
    if (!db) return;
    cache.clear();
    // Statements a borrower prepared through async_run and left: finalized, or the close would fail.
    while (::sqlite3_stmt* st = ::sqlite3_next_stmt(db, nullptr)) ::sqlite3_finalize(st);
    ::sqlite3_close(db);
    db = nullptr;
    open = false;
}

// ---- connection ----------------------------------------------------------------------------------

connection::connection(asio::any_io_executor ex, asio::any_io_executor offload,
                       std::shared_ptr<void> keep_alive)
    : keep_alive_(std::move(keep_alive)), impl_(std::make_shared<impl>(std::move(ex), std::move(offload))) {}

connection::~connection() {
    if (!impl_) return;
    {
        std::lock_guard lock(impl_->m);
        if (impl_->running.load(std::memory_order_acquire)) {
            impl_->close_after_job = true;  // the job under way closes when it ends
            if (impl_->db) {
                impl_->stop.store(static_cast<int>(stop_reason::cancelled), std::memory_order_relaxed);
                ::sqlite3_interrupt(impl_->db);
            }
            return;
        }
        if (!impl_->db) return;
    }
    // Closing may checkpoint the WAL (file I/O): on the offload executor. Should that executor be
    // torn down before it runs, the job is dropped and impl's destructor closes instead.
    auto offload = impl_->offload;  // before impl_ is moved from
    asio::post(offload, [s = std::move(impl_)] { s->close_now(); });
}

connection::connection(connection&&) noexcept = default;
connection& connection::operator=(connection&& o) noexcept {
    if (this != &o) {
        connection dying(std::move(*this));
        keep_alive_ = std::move(o.keep_alive_);
        impl_ = std::move(o.impl_);
    }
    return *this;
}

const asio::any_io_executor& connection::get_executor() const noexcept {
    return impl_->ex;
}
bool connection::needs_reset(reset_policy policy) const noexcept {
    if (impl_->running.load(std::memory_order_acquire)) return true;
    if (policy == reset_policy::always || impl_->in_txn || impl_->busy_statements) return true;
    const bool changed = impl_->touched.load(std::memory_order_relaxed) || impl_->session != 0;
    return changed && (policy == reset_policy::tracked || impl_->reader);
}
void connection::mark_dirty() noexcept {
    impl_->touched.store(true, std::memory_order_relaxed);
}
bool connection::in_transaction() const noexcept {
    return impl_->in_txn;
}
void connection::set_statement_timeout(std::chrono::steady_clock::duration timeout) noexcept {
    impl_->statement_timeout = timeout;
}
void connection::set_tracer(std::shared_ptr<statement_tracer> tracer) noexcept {
    impl_->tracer = std::move(tracer);
}
bool connection::is_open() const noexcept {
    return impl_ && impl_->open;
}
bool connection::is_reader() const noexcept {
    return impl_->reader;
}
const std::string& connection::path() const noexcept {
    return impl_->path;
}
const diagnostics& connection::last_error() const noexcept {
    return impl_->last;
}
std::size_t connection::cached_statements() const noexcept {
    return impl_->running.load(std::memory_order_acquire) ? 0 : impl_->cache.size();
}

namespace {

// Runs one pragma; an error code, and the failure in s.last.
error_code pragma(connection::impl& s, const std::string& sql, const std::string& prefix) {
    char* msg = nullptr;
    int rc = ::sqlite3_exec(s.db, sql.c_str(), nullptr, nullptr, &msg);
    ::sqlite3_free(msg);
    return rc == SQLITE_OK ? error_code{} : s.fail(rc, prefix);
}

error_code open_on_worker(connection::impl& s, const connection_options& o, const std::string& journal,
                          const std::string& sync) {
    const std::string prefix = "cannot open \"" + o.path + "\": ";
    const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI |
                      SQLITE_OPEN_EXRESCODE;
    ::sqlite3* db = nullptr;
    int rc = ::sqlite3_open_v2(o.path.c_str(), &db, flags, nullptr);
    {
        std::lock_guard lock(s.m);
        s.db = db;
    }
    if (rc != SQLITE_OK) {
        error_code ec = s.fail(rc, prefix);
        s.close_now();
        return ec;
    }
    ::sqlite3_extended_result_codes(s.db, 1);
    install_handlers(s);
    std::string sql;
    if (!journal.empty() && !o.reader) sql += "PRAGMA journal_mode=" + journal + ";";
    if (!sync.empty()) sql += "PRAGMA synchronous=" + sync + ";";
    sql += o.foreign_keys ? "PRAGMA foreign_keys=ON;" : "PRAGMA foreign_keys=OFF;";
    if (o.reader) sql += "PRAGMA query_only=1;";
    sql += "PRAGMA schema_version;";  // reads the header: a file that is not a database fails now
    error_code ec = pragma(s, sql, prefix);
    if (!ec)
        ec = detail::capture_baseline(s, o.reader ? std::string() : journal);  // as every reset leaves it
    if (ec) {
        s.close_now();
        return ec;
    }
    detail::watch_session(s);
    s.session = 0;
    s.last = {};
    return {};
}

}  // namespace

void connection::start_open(connection_options o, hex_t hex,
                            asio::any_completion_handler<void(error_code)> handler) {
    std::string journal, sync;
    try {
        if (!o.journal_mode.empty())
            journal = checked_pragma_value(
                o.journal_mode, {"DELETE", "TRUNCATE", "PERSIST", "MEMORY", "WAL", "OFF"}, "journal_mode");
        if (!o.synchronous.empty())
            sync = checked_pragma_value(o.synchronous, {"OFF", "NORMAL", "FULL", "EXTRA"}, "synchronous");
    } catch (const std::invalid_argument& e) {
        impl_->last = {SQLITE_MISUSE, e.what(), -1};
        return complete_now(hex, std::move(handler), from_result_code(SQLITE_MISUSE));
    }
    // Claimed first: the fields a job writes are read only while no job runs.
    if (!claim(*impl_))
        return complete_now(hex, std::move(handler), make_error_code(error::operation_in_progress));
    if (impl_->open) {
        release_claim(*impl_);
        return complete_now(hex, std::move(handler), from_result_code(SQLITE_MISUSE));
    }
    impl_->path = o.path;
    impl_->reader = o.reader;
    impl_->busy_timeout = o.busy_timeout;
    impl_->cache.set_capacity(o.statement_cache_capacity);
    offload(impl_, hex, std::move(handler), [o = std::move(o), journal, sync](impl& s) {
        error_code ec = open_on_worker(s, o, journal, sync);
        s.snapshot();
        return std::make_tuple(ec);
    });
}

void connection::start_run(respool::detail::unique_function<void(::sqlite3*)> fn, hex_t hex,
                           asio::any_completion_handler<void(std::exception_ptr)> handler) {
    auto refuse = [&](error e) {
        complete_now(hex, std::move(handler),
                     std::make_exception_ptr(boost::system::system_error(make_error_code(e))));
    };
    if (!claim(*impl_)) return refuse(error::operation_in_progress);
    if (!impl_->open) {
        release_claim(*impl_);
        return refuse(error::not_open);
    }
    impl_->touched.store(true, std::memory_order_relaxed);
    offload(impl_, hex, std::move(handler), [fn = std::move(fn)](impl& s) {
        std::exception_ptr e;
        try {
            fn(s.db);
        } catch (...) {
            e = std::current_exception();
        }
        s.snapshot();
        return std::make_tuple(e);
    });
}

void connection::start_reset(reset_policy policy, hex_t hex,
                             asio::any_completion_handler<void(error_code)> handler) {
    if (!claim(*impl_)) {
        // The borrower returned it with an operation still running: stop it; the caller destroys it.
        impl_->interrupt(stop_reason::cancelled);
        return complete_now(hex, std::move(handler), make_error_code(error::operation_in_progress));
    }
    if (!impl_->open) {
        release_claim(*impl_);
        return complete_now(hex, std::move(handler), make_error_code(error::not_open));
    }
    offload(impl_, hex, std::move(handler), [policy](impl& s) {
        s.has_deadline = false;
        // An un-reset SELECT keeps its read snapshot (stale reads for the next borrower, and a WAL
        // that cannot be checkpointed past it).
        for (::sqlite3_stmt* st = ::sqlite3_next_stmt(s.db, nullptr); st; st = ::sqlite3_next_stmt(s.db, st))
            if (::sqlite3_stmt_busy(st)) ::sqlite3_reset(st);
        error_code ec;
        if (::sqlite3_get_autocommit(s.db) == 0) ec = pragma(s, "ROLLBACK", "reset: ");
        const bool touched = s.touched.load(std::memory_order_relaxed);
        const bool changed = touched || s.session != 0;
        if (!ec && (policy == reset_policy::always || (policy == reset_policy::tracked && changed))) {
            ec = detail::restore_session(s);
            if (!ec) {
                install_handlers(s);
                // Only async_run can have replaced the authorizer; setting it expires every prepared
                // statement (each is prepared again at its next run), so not without need.
                if (touched) detail::watch_session(s);
            }
        } else if (!ec && s.reader && changed) {
            ec = pragma(s, "PRAGMA query_only=1", "reset: ");  // reset_policy::none: routing relies on it
        }
        s.snapshot();
        if (!ec && (s.in_txn || s.busy_statements)) ec = from_result_code(SQLITE_BUSY);
        if (!ec) {
            s.touched.store(false, std::memory_order_relaxed);
            s.session = 0;
        }
        return std::make_tuple(ec);
    });
}

}  // namespace respool::sqlite
