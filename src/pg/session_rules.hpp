// What a borrower's statements leave in a PostgreSQL session, decided without touching libpq: what
// a command tag says about the session, when a read-only error means the server was demoted, whether a
// returned connection gets the full reset, and the script that resets it (docs/06-postgresql.md,
// "Reset on return"). session.cpp reads libpq's reports and applies these decisions.
#pragma once

#include <respool/pg/connection.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace respool::pg::detail {

// What one result's command tag says about the session.
enum class tag_effect : std::uint8_t {
    none,                // SELECT, INSERT, UPDATE, DELETE and the like: nothing left behind
    dirty,               // SET, RESET, LISTEN, UNLISTEN, DECLARE CURSOR, CREATE, LOAD, DISCARD: reset it
    user_prepared,       // PREPARE by hand: reset, and DEALLOCATE ALL at the reset
    statements_dropped,  // DISCARD ALL, DEALLOCATE ALL: the server dropped every prepared statement
    statement_dropped,   // DEALLOCATE of one statement by hand: maybe one of respool's own
};
tag_effect classify_command_tag(std::string_view tag) noexcept;

// A write that met read-only (25006) on a server that now reports itself read-only: failover. The
// borrower's own read-only transaction also says 25006, which the settings tell apart.
bool failover_signal(std::string_view sqlstate, bool default_transaction_read_only,
                     bool in_hot_standby) noexcept;

// Whether a returned connection gets the full session reset (not just a ROLLBACK).
bool full_reset(reset_policy policy, bool session_changed) noexcept;

// The transaction state libpq reports, as far as a reset cares.
enum class transaction_phase : std::uint8_t { idle, open, unusable };  // unusable: active or unknown

// The reset script for a returned connection: a ROLLBACK for an open (or failed) transaction, then
// the session reset when `full` (with DEALLOCATE ALL when the borrower prepared statements by hand).
// Empty: nothing to send. nullopt: the connection cannot be reset (a statement still running, or an
// unknown state): it is closed.
std::optional<std::string> reset_script(transaction_phase phase, bool full, bool user_prepared);

}  // namespace respool::pg::detail
