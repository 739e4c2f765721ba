// The authorizer that records what a statement changes in the session, the pragmas read back after the
// open, and the restore of a full reset. The rules are in session_state.hpp and docs/07-sqlite.md.
#include "session_state.hpp"

#include <cctype>
#include <string_view>

namespace respool::sqlite::detail {

namespace {

bool same_name(const char* a, const char* b) noexcept {
    return a && b && ::sqlite3_stricmp(a, b) == 0;
}

// Pragmas that take an argument but set nothing of the connection: questions about the schema, and
// actions on the database file (whose effects are data, as an INSERT's are).
constexpr const char* sets_nothing[] = {
    "table_info",     "table_xinfo",        "table_list",        "index_info",      "index_xinfo",
    "index_list",     "foreign_key_list",   "foreign_key_check", "integrity_check", "quick_check",
    "wal_checkpoint", "incremental_vacuum", "optimize",          "user_version",    "application_id",
};

// The per-connection settings read back after the open and set again by a full reset. query_only is set
// last (the reset runs writable; a reader is query_only again only after everything else). A pragma this
// SQLite does not know returns no row at the open and is left out (then setting it is session_lost).
constexpr const char* restorable[] = {
    "query_only",
    "foreign_keys",
    "defer_foreign_keys",
    "synchronous",
    "journal_mode",
    "journal_size_limit",
    "locking_mode",
    "busy_timeout",
    "cache_size",
    "cache_spill",
    "temp_store",
    "mmap_size",
    "threads",
    "max_page_count",
    "automatic_index",
    "cell_size_check",
    "checkpoint_fullfsync",
    "fullfsync",
    "ignore_check_constraints",
    "legacy_alter_table",
    "recursive_triggers",
    "reverse_unordered_selects",
    "secure_delete",
    "trusted_schema",
    "writable_schema",
    "wal_autocheckpoint",
    "analysis_limit",
};

unsigned pragma_effect(const connection::impl& s, const char* name, const char* value, const char* schema) {
    if (!value) return 0;  // a read, or an action without argument (shrink_memory, optimize, ...)
    for (const char* n : sets_nothing)
        if (same_name(name, n)) return 0;
    if (schema && !same_name(schema, "main")) {
        // An attached database's setting goes with the DETACH; temp's is not restored.
        return same_name(schema, "temp") ? session_changed | session_lost : session_changed;
    }
    for (const auto& [n, v] : s.baseline)
        if (same_name(name, n.c_str())) return session_changed;
    return session_changed | session_lost;
}

int on_authorize(void* arg, int action, const char* a1, const char* a2, const char* db,
                 const char* /*trigger*/) noexcept {
    auto* s = static_cast<connection::impl*>(arg);
    unsigned e = 0;
    switch (action) {
    case SQLITE_PRAGMA: e = pragma_effect(*s, a1, a2, db); break;
    case SQLITE_ATTACH:
    case SQLITE_DETACH:
    case SQLITE_CREATE_TEMP_INDEX:
    case SQLITE_CREATE_TEMP_TABLE:
    case SQLITE_CREATE_TEMP_TRIGGER:
    case SQLITE_CREATE_TEMP_VIEW: e = session_changed; break;
    case SQLITE_READ:
    case SQLITE_SELECT:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE:
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT: break;
    default:  // CREATE TABLE temp.t, CREATE VIRTUAL TABLE temp.v, CREATE INDEX temp.i, ...
        if (same_name(db, "temp")) e = session_changed;
    }
    if (e) (s->preparing ? s->prepared_effects : s->session) |= e;
    return SQLITE_OK;
}

// A value read back from SQLite that can go into a PRAGMA's text as it is.
bool plain(std::string_view v) noexcept {
    if (v.empty()) return false;
    for (char c : v)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return false;
    return true;
}

// Runs `sql` (a script without rows we need); the failure's message in s.last.
error_code exec(connection::impl& s, const std::string& sql) {
    int rc = ::sqlite3_exec(s.db, sql.c_str(), nullptr, nullptr, nullptr);
    return rc == SQLITE_OK ? error_code{} : s.fail(rc, "reset: " + sql + ": ");
}

// The text of every row's columns of `sql` (no parameters).
error_code rows_of(connection::impl& s, const char* sql, std::vector<std::vector<std::string>>& out) {
    ::sqlite3_stmt* st = nullptr;
    const std::string prefix = std::string("reset: ") + sql + ": ";
    int rc = ::sqlite3_prepare_v2(s.db, sql, -1, &st, nullptr);
    if (rc != SQLITE_OK) return s.fail(rc, prefix);
    while ((rc = ::sqlite3_step(st)) == SQLITE_ROW) {
        auto& row = out.emplace_back();
        for (int i = 0; i < ::sqlite3_column_count(st); ++i) {
            const auto* t = reinterpret_cast<const char*>(::sqlite3_column_text(st, i));
            row.emplace_back(t ? t : "");
        }
    }
    error_code ec = rc == SQLITE_DONE ? error_code{} : s.fail(rc, prefix);
    ::sqlite3_finalize(st);
    return ec;
}

std::string quoted(const std::string& name) {
    std::string q = "\"";
    for (char c : name) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

error_code not_restored(connection::impl& s, std::string why) {
    s.last = {SQLITE_MISUSE, "reset: " + std::move(why), -1};
    return make_error_code(error::session_not_restorable);
}

}  // namespace

void watch_session(connection::impl& s) noexcept {
    ::sqlite3_set_authorizer(s.db, &on_authorize, &s);
}

error_code capture_baseline(connection::impl& s, const std::string& journal_mode) {
    s.baseline.clear();
    std::string query_only;
    std::string script;
    for (const char* name : restorable) {
        if (same_name(name, "journal_mode")) {
            // A property of the file, which only the writer sets (a connection reads "delete" until it
            // has looked at the WAL): restored to the pool's setting, never to what was read.
            if (!journal_mode.empty()) {
                script += "PRAGMA journal_mode=" + journal_mode + ";";
                s.baseline.emplace_back(name, journal_mode);
            }
            continue;
        }
        std::vector<std::vector<std::string>> rows;
        if (error_code ec = rows_of(s, (std::string("PRAGMA ") + name).c_str(), rows)) return ec;
        if (rows.size() != 1 || rows[0].size() != 1 || !plain(rows[0][0])) continue;
        std::string value = rows[0][0];
        if (same_name(name, "secure_delete") && value == "2") value = "FAST";  // "2" would set 1
        if (same_name(name, "query_only"))
            query_only = value;  // set last, below
        else
            script += std::string("PRAGMA ") + name + "=" + value + ";";
        s.baseline.emplace_back(name, std::move(value));
    }
    if (!query_only.empty()) script += "PRAGMA query_only=" + query_only + ";";
    s.restore_script = std::move(script);
    return {};
}

error_code restore_session(connection::impl& s) {
    if (s.session & session_lost)
        return not_restored(s, "the borrower set a PRAGMA that the reset does not restore");
    // Writable, and without foreign key checks while TEMP tables are dropped (a parent dropped before
    // its child would fail); the script below sets both back.
    if (error_code ec = exec(s, "PRAGMA query_only=0; PRAGMA foreign_keys=OFF")) return ec;
    std::vector<std::vector<std::string>> attached;
    if (error_code ec =
            rows_of(s, "SELECT name FROM pragma_database_list WHERE name NOT IN ('main', 'temp')", attached))
        return ec;
    for (const auto& row : attached)
        if (error_code ec = exec(s, "DETACH DATABASE " + quoted(row[0]))) return ec;
    // Triggers first (one on a main table outlives the TEMP tables), then views, then tables (their
    // indexes and triggers go with them). SQLite's own tables (sqlite_sequence) cannot be dropped.
    std::vector<std::vector<std::string>> temps;
    if (error_code ec = rows_of(s,
                                "SELECT type, name FROM temp.sqlite_schema WHERE type IN ('trigger', 'view', "
                                "'table') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY CASE type WHEN "
                                "'trigger' THEN 0 WHEN 'view' THEN 1 ELSE 2 END",
                                temps))
        return ec;
    for (const auto& row : temps) {
        const std::string kind = row[0] == "trigger" ? "TRIGGER" : row[0] == "view" ? "VIEW" : "TABLE";
        if (error_code ec = exec(s, "DROP " + kind + " IF EXISTS temp." + quoted(row[1]))) return ec;
    }
    if (error_code ec = exec(s, s.restore_script)) return ec;
    std::vector<std::vector<std::string>> left;
    if (error_code ec =
            rows_of(s,
                    "SELECT (SELECT count(*) FROM pragma_database_list WHERE name NOT IN ('main', 'temp')), "
                    "(SELECT count(*) FROM "
                    "temp.sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\')",
                    left))
        return ec;
    if (left.size() != 1 || left[0] != std::vector<std::string>{"0", "0"})
        return not_restored(s, "an attached database or a TEMP object could not be removed");
    return {};
}

}  // namespace respool::sqlite::detail
