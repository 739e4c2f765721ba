// The cluster monitor's probe: one statement that tells, in one round trip on a primary or a standby,
// what the topology needs (in recovery? read-only? timeline, WAL position, replay age, system id), and
// the reading of its one row.
#pragma once

#include "topology.hpp"

#include <respool/pg/values.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace respool::pg::detail {

// The probe statement (simple protocol). The timeline: a primary's from its current WAL file name
// (pg_walfile_name() fails during recovery: the CASE keeps it to primaries), a standby's the one its
// WAL receiver receives, or, when the role may not see that (pg_stat_wal_receiver shows it only to
// pg_read_all_stats) or it streams nothing, its last restartpoint's (the last column says which). The insert
// LSN (not the write LSN): an asynchronous commit is acknowledged before its record is written, and a standby
// that replayed this far holds every acknowledged commit.
extern const char* const probe_sql;

// Fills r's fields from the probe's row (not `sent` / `received`); false when the row is not one
// (then `why` says what was wrong).
bool read_probe(const result& row, probe_reading& r, std::string& why);

// PostgreSQL's LSN text "16/B374D848" as a number; nullopt when it is not one.
std::optional<std::uint64_t> parse_lsn(std::string_view text) noexcept;

}  // namespace respool::pg::detail
