// What a borrower may change in a connection's session, and how the reset on return puts it back.
//
// Seen, not guessed: an SQLite authorizer (sqlite3_set_authorizer) is called for every action of a
// statement while it is prepared, so it sees a PRAGMA, an ATTACH or a TEMP object however the text is
// written (case, comments, schema names, inside a script). SQLite does not call it again when a
// prepared statement runs again, so a cached statement carries what its preparation found
// (statement_cache::cached::effects) and the run adds it to the connection's `session`. A call outside
// our own prepares (SQLite re-preparing a statement after a schema change, a pragma table-valued
// function running its PRAGMA) goes to `session` at once.
//
// Restored, not reopened: the per-connection pragmas are read back right after the open (the pool's
// own settings and SQLite's defaults for the rest); a reset sets every one of them again, detaches
// every attached database and drops every TEMP object, then checks that no database but main and temp
// and no TEMP object is left. A PRAGMA set that is not among those read back cannot be restored: the
// reset fails and the pool destroys the connection.
#pragma once

#include "connection_impl.hpp"

namespace respool::sqlite::detail {

// Bits of connection::impl::session and statement_cache::cached::effects.
enum session_effect : unsigned {
    session_changed = 1,  // a setting, an attached database or a TEMP object: the reset restores it
    session_lost = 2,     // a PRAGMA set that is not restored: the connection must not be reused
};

// Installs the authorizer that records session effects on `s` (open, and a full reset).
void watch_session(connection::impl& s) noexcept;

// Reads the per-connection pragmas after the open into s.baseline and s.restore_script. `journal_mode`:
// the one the open set (a writer's), or "" (then a PRAGMA journal_mode set is not restored).
error_code capture_baseline(connection::impl& s, const std::string& journal_mode);

// Puts the session back as capture_baseline found it (outside a transaction; the handlers are the
// caller's to install again). The failure's message in s.last.
error_code restore_session(connection::impl& s);

}  // namespace respool::sqlite::detail
