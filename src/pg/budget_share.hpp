// The connection budget's allocation rule, without a socket or a clock: how many connections each
// live member of the shared table should hold (the division), and how one member moves its own share
// toward that without the sum ever exceeding the budget (the step). Every member computes the division
// from the same rows under the same lock, so they agree on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace respool::pg::detail::budget {

// One live row of the table.
struct member_row {
    std::string instance;
    std::uint32_t demand = 1;   // connections it could use now, its member connection included (>= 1)
    std::uint32_t granted = 0;  // connections it may hold, its member connection included
};

// B = min(max_connections - superuser_reserved - reserved - reserve, rolconnlimit when >= 0), >= 0.
[[nodiscard]] std::uint32_t budget_of(std::int64_t max_connections, std::int64_t superuser_reserved,
                                      std::int64_t reserved, std::int64_t reserve,
                                      std::int64_t role_limit) noexcept;

// What a member asks for: the peak of in use + waiting over the last heartbeat (at least 1: an idle
// pool keeps one connection for its next request), plus its member connection, at most its
// configured max + 1.
[[nodiscard]] std::uint32_t demand_of(std::size_t peak_busy, std::size_t configured_max) noexcept;

// The division of `budget` among `rows` (same order): a demand-weighted max-min fair share, never above
// a member's demand. First every member gets min(2, demand) (its member connection and one pooled
// connection) while the budget allows: when it cannot give everyone 2, members that already hold 2
// keep their place, then the order of instance ids decides. What is left is handed out one connection
// at a time to the member with the smallest share per unit of demand (ties: lower instance id).
[[nodiscard]] std::vector<std::uint32_t> fair_targets(std::uint32_t budget,
                                                      const std::vector<member_row>& rows);

// One member's move in one tick.
struct own_step {
    std::uint32_t target = 0;   // its place in the division
    std::uint32_t granted = 0;  // what it writes into its row now
    std::size_t pool_cap = 0;   // pooled connections it may hold after this tick (its pool's max; 0: none)
    // Every row (this one as written now) at its place in the division: nothing to move. While some
    // member is not, every member looks again sooner, so that a change settles in a heartbeat or so.
    bool settled = false;
};

// `own` is this member's index in `rows` (its row with its demand of this tick and the granted it has
// written before); `pool_total` the connections its pool holds now (being made included). A member
// above its target lowers its pool's cap now but writes the lower granted only once its pool holds no
// more than the new cap (a later tick): until then the others cannot take those connections. A member
// below its target takes only what is free: budget - the sum of every row's granted (its own included).
// So the sum of granted never exceeds the budget, and no member holds more than its granted.
[[nodiscard]] own_step next_step(std::uint32_t budget, const std::vector<member_row>& rows, std::size_t own,
                                 std::size_t pool_total);

// The pooled connections a share allows: granted - 1 (the member connection is the 1), 0 below 2.
[[nodiscard]] constexpr std::size_t pool_cap_of(std::uint32_t granted) noexcept {
    return granted >= 2 ? granted - 1 : 0;
}

}  // namespace respool::pg::detail::budget
