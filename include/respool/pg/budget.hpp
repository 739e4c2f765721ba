// respool::pg connection budget: many instances of a service (each with its own pg::pool) share the
// server's connections through a table in PostgreSQL itself, so that the sum of their pools never
// exceeds what the server accepts. Opt in with pool_config::budget; docs/06-postgresql.md "A
// connection budget shared by many instances" has every rule.
#pragma once

#include <respool/defaulted.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace respool::pg {

struct budget_config {
    // The schema (the operator's) that holds the shared table <schema>.respool_budget. Required.
    std::string schema{};
    // Connections left for everything that is not a member: admin sessions, migrations, monitoring.
    std::size_t reserve = 3;
    // How often each member reads the table and takes its share. Left at its default (1 s) while
    // lease is set to 1 s or less, it is a third of lease.
    defaulted<std::chrono::milliseconds> heartbeat{by_default, std::chrono::milliseconds(1000)};
    // A member not heard of for this long is gone and its share returns to the others (must exceed
    // heartbeat). Left at its default (3 s) while heartbeat is set to 3 s or more, it is three
    // heartbeats.
    defaulted<std::chrono::milliseconds> lease{by_default, std::chrono::milliseconds(3000)};
    // This instance's name in the table, a UUID (8-4-4-4-12 hexadecimal digits). Empty: a random one
    // made when the pool starts (never the host name: two instances on one host are two members).
    std::string instance_id{};
};

// What pool::budget_stats() says.
struct budget_stats {
    bool enabled = false;       // pool_config::budget was set
    std::string degraded{};     // why the pool keeps its configured max instead; empty while sharing
    std::uint32_t budget = 0;   // B: the connections the members share (as of the last tick)
    std::uint32_t members = 0;  // live members, this one included
    std::uint32_t granted = 0;  // this member's share written in the table (its member connection + pool)
    std::uint32_t target = 0;   // what the division gives it; granted moves toward it
    std::uint32_t demand = 0;   // what it asked for (peak in use + waiting + 1 over the last heartbeat)
    std::uint64_t ticks = 0;    // transactions on the table that committed
};

}  // namespace respool::pg
