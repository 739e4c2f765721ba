#include "probe.hpp"

#include <charconv>
#include <exception>

namespace respool::pg::detail {

const char* const probe_sql =
    "SELECT pg_is_in_recovery(),"
    " current_setting('default_transaction_read_only') = 'on',"
    " CASE WHEN pg_is_in_recovery() THEN coalesce((SELECT received_tli FROM pg_stat_wal_receiver),"
    " (SELECT timeline_id FROM pg_control_checkpoint()))"
    " ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint END,"
    " (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() "
    "END)::text,"
    " CASE WHEN pg_is_in_recovery() THEN"
    " (extract(epoch FROM now() - pg_last_xact_replay_timestamp()) * 1000000)::bigint END,"
    " (SELECT system_identifier FROM pg_control_system())::text,"
    " NOT pg_is_in_recovery() OR (SELECT received_tli FROM pg_stat_wal_receiver) IS NOT NULL";

std::optional<std::uint64_t> parse_lsn(std::string_view text) noexcept {
    const auto slash = text.find('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == text.size()) return std::nullopt;
    std::uint64_t hi = 0, lo = 0;
    auto part = [](std::string_view s, std::uint64_t& out) {
        if (s.size() > 8) return false;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, 16);
        return ec == std::errc() && p == s.data() + s.size();
    };
    if (!part(text.substr(0, slash), hi) || !part(text.substr(slash + 1), lo)) return std::nullopt;
    return (hi << 32) | lo;
}

bool read_probe(const result& row, probe_reading& r, std::string& why) {
    if (row.rows() != 1 || row.columns() != 7) {
        why = "the probe returned " + std::to_string(row.rows()) + " rows of " +
              std::to_string(row.columns()) + " columns";
        return false;
    }
    try {
        r.in_recovery = row.get<bool>(0, 0);
        r.read_only = row.get<bool>(0, 1);
        r.timeline = static_cast<std::uint32_t>(row.get<std::int64_t>(0, 2));
        r.lsn = 0;
        if (!row.is_null(0, 3)) {
            const auto lsn = parse_lsn(row.text(0, 3));
            if (!lsn) {
                why = "the probe's LSN is not one: " + std::string(row.text(0, 3));
                return false;
            }
            r.lsn = *lsn;
        }
        r.replay_age.reset();
        if (auto age = row.get<std::optional<std::int64_t>>(0, 4))
            r.replay_age = std::chrono::microseconds(*age < 0 ? 0 : *age);
        r.system_id = 0;
        if (!row.is_null(0, 5)) {
            const std::string_view id = row.text(0, 5);
            std::from_chars(id.data(), id.data() + id.size(), r.system_id);
        }
        r.timeline_exact = row.get<bool>(0, 6);
    } catch (const std::exception& e) {
        why = std::string("the probe's row: ") + e.what();
        return false;
    }
    return true;
}

}  // namespace respool::pg::detail
