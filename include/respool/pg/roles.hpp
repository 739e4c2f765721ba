// respool::pg cluster vocabulary: where a statement may go (route), what a host is to the cluster
// (host_role) and a committed write's place in the write-ahead log (commit_token), which a later read
// can require a standby to have replayed (read-your-writes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace respool::pg {

// Where a cluster sends a statement.
//  primary         the writable primary (the default; writes and transactions always go there).
//  standby         a standby whose replication lag is within max_replica_lag (and that has replayed
//                  the read's commit_token); never the primary. None eligible: the read waits for
//                  one up to failover_wait, then fails unavailable.
//  prefer_standby  such a standby when there is one, else the primary.
enum class route { primary, standby, prefer_standby };

// What a host is to the cluster, from its last probe, its sessions' reports and its errors.
//  unknown  not heard from yet.
//  primary  answers, not in recovery, on the highest timeline seen: writes may go there (unless it
//           is read-only: default_transaction_read_only on).
//  standby  answers, in recovery (a streaming standby): reads within the lag bound may go there.
//  fenced   claims to be primary on a timeline lower than one seen on another primary (a demoted or
//           split-off old primary): nothing is sent to it until it comes back as a standby.
//  down     the last probe could not connect or failed.
enum class host_role { unknown, primary, standby, fenced, down };

[[nodiscard]] std::string_view to_string(route r) noexcept;      // "primary", "standby", "prefer-standby"
[[nodiscard]] std::string_view to_string(host_role r) noexcept;  // "unknown", "primary", ...
// "primary", "standby", "prefer-standby" (also "prefer_standby"); nullopt for anything else.
[[nodiscard]] std::optional<route> route_from_string(std::string_view text) noexcept;

// A committed transaction's position in the primary's write-ahead log (an LSN), read in the COMMIT's
// own round trip. A cluster read given it goes only to a host that has replayed at least this far, so
// it sees the transaction (read-your-writes). Valid within one cluster; after a failover to a new
// timeline the new primary satisfies every token. Empty (lsn 0): no requirement.
struct commit_token {
    std::uint64_t lsn = 0;
    explicit operator bool() const noexcept { return lsn != 0; }
    friend bool operator==(commit_token, commit_token) = default;
};

// PostgreSQL's text form of an LSN ("16/B374D848"), and back (nullopt when `text` is not one).
[[nodiscard]] std::string to_string(commit_token t);
[[nodiscard]] std::optional<commit_token> commit_token_from_string(std::string_view text) noexcept;

}  // namespace respool::pg
