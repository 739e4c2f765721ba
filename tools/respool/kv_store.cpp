#include "kv_store.hpp"

#include "db_health.hpp"

#include <respool/db_condition.hpp>

#include <charconv>
#include <cstdint>
#include <limits>
#include <string_view>

namespace respool_cli {

std::unique_ptr<kv_store> make_sqlite_store(boost::asio::any_io_executor ex, const db_target& target,
                                            const serve_config& cfg);
std::unique_ptr<kv_store> make_pg_store(boost::asio::any_io_executor ex, const db_target& target,
                                        const serve_config& cfg);

std::unique_ptr<kv_store> make_pg_cluster_store(boost::asio::any_io_executor ex, const db_target& target,
                                                const serve_config& cfg, std::size_t worker);

std::unique_ptr<kv_store> make_store(boost::asio::any_io_executor ex, const db_target& target,
                                     const serve_config& cfg, std::size_t worker) {
    if (target.kind == db_kind::sqlite) return make_sqlite_store(std::move(ex), target, cfg);
    if (target.cluster) return make_pg_cluster_store(std::move(ex), target, cfg, worker);
    return make_pg_store(std::move(ex), target, cfg);
}

void kv_store::note(const respool::error_code& ec, std::string_view words) {
    if (!ec) {
        reachable_.store(true, std::memory_order_relaxed);
        if (health_) health_->answered(worker_);
        return;
    }
    // A file locked by another process is a busy database, not an unreachable one: /health stays up.
    if (ec == respool::db::condition::busy) return;
    // The circuit open: the database is still down (counted for the log), its cause unchanged.
    if (ec == respool::errc::unavailable) {
        if (health_) health_->failed(worker_, {});
        return;
    }
    // No connection can be made, the server went away or is restarting, a failover is under way.
    if (ec != respool::db::condition::unavailable) return;
    reachable_.store(false, std::memory_order_relaxed);
    if (health_) health_->failed(worker_, classify(ec, words));
}

kv_result increment(const std::string* current) {
    std::int64_t value = 0;
    if (current) {
        std::string_view text = *current;
        std::string_view digits = text;
        if (!digits.empty() && (digits.front() == '+' || digits.front() == '-')) digits.remove_prefix(1);
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos)
            return {{}, kv_result::outcome::not_integer, {}};
        if (text.front() == '+') text.remove_prefix(1);  // from_chars takes '-' but not '+'
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size())  // beyond 64 bits
            return {{}, kv_result::outcome::not_integer, {}};
    }
    if (value == std::numeric_limits<std::int64_t>::max()) return {{}, kv_result::outcome::overflow, {}};
    return {{}, kv_result::outcome::ok, std::to_string(value + 1)};
}

}  // namespace respool_cli
