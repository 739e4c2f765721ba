#include "budget_share.hpp"

#include <algorithm>
#include <numeric>
#include <queue>

namespace respool::pg::detail::budget {

std::uint32_t budget_of(std::int64_t max_connections, std::int64_t superuser_reserved, std::int64_t reserved,
                        std::int64_t reserve, std::int64_t role_limit) noexcept {
    std::int64_t b = max_connections - superuser_reserved - reserved - reserve;
    if (role_limit >= 0) b = std::min(b, role_limit);
    return static_cast<std::uint32_t>(std::clamp<std::int64_t>(b, 0, UINT32_MAX));
}

std::uint32_t demand_of(std::size_t peak_busy, std::size_t configured_max) noexcept {
    const std::size_t d = std::min(std::max<std::size_t>(peak_busy, 1), configured_max) + 1;
    return static_cast<std::uint32_t>(std::min<std::size_t>(d, UINT32_MAX));
}

std::vector<std::uint32_t> fair_targets(std::uint32_t budget, const std::vector<member_row>& rows) {
    const std::size_t n = rows.size();
    std::vector<std::uint32_t> given(n, 0);
    auto demand = [&](std::size_t i) { return std::max<std::uint32_t>(rows[i].demand, 1); };

    // The minimums: members that hold them already first (a newcomer does not displace them), then by id.
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const bool ha = rows[a].granted >= 2, hb = rows[b].granted >= 2;
        if (ha != hb) return ha;
        return rows[a].instance < rows[b].instance;
    });
    std::uint32_t left = budget;
    std::vector<bool> seated(n, false);
    for (std::size_t i : order) {
        const std::uint32_t floor = std::min<std::uint32_t>(2, demand(i));
        if (floor > left) continue;
        given[i] = floor;
        left -= floor;
        seated[i] = true;
    }

    // The rest, one connection at a time, to the seated member with the smallest share per unit of
    // demand that still wants more (given/demand compared by cross-multiplication).
    auto after = [&](std::size_t a, std::size_t b) {  // true when a comes after b
        const std::uint64_t lhs = std::uint64_t{given[a]} * demand(b);
        const std::uint64_t rhs = std::uint64_t{given[b]} * demand(a);
        if (lhs != rhs) return lhs > rhs;
        return rows[a].instance > rows[b].instance;
    };
    std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(after)> next(after);
    for (std::size_t i = 0; i < n; ++i)
        if (seated[i] && given[i] < demand(i)) next.push(i);
    while (left > 0 && !next.empty()) {
        const std::size_t i = next.top();
        next.pop();
        ++given[i];
        --left;
        if (given[i] < demand(i)) next.push(i);
    }
    return given;
}

namespace {
// The member's own move toward s.target (see next_step).
own_step own_move(own_step s, std::uint32_t budget, const std::vector<member_row>& rows, std::size_t own,
                  std::size_t pool_total) {
    const std::uint32_t had = rows[own].granted;
    if (s.target < had) {
        // Shrink: the pool's cap now; the row says what the pool still holds (never less), and reaches
        // the target once it is drained.
        s.pool_cap = pool_cap_of(s.target);
        if (pool_total <= s.pool_cap) {
            s.granted = s.target;
        } else {
            const std::uint64_t holds = std::uint64_t{pool_total} + 1;  // + the member connection
            s.granted = static_cast<std::uint32_t>(
                std::max<std::uint64_t>(s.target, std::min<std::uint64_t>(had, holds)));
        }
        return s;
    }
    if (s.target > had) {
        // Grow: only into what nobody holds.
        std::uint64_t sum = 0;
        for (const member_row& r : rows) sum += r.granted;
        const std::uint64_t free = sum < budget ? budget - sum : 0;
        s.granted = had + static_cast<std::uint32_t>(std::min<std::uint64_t>(s.target - had, free));
    } else {
        s.granted = had;
    }
    s.pool_cap = pool_cap_of(s.granted);
    return s;
}

}  // namespace

own_step next_step(std::uint32_t budget, const std::vector<member_row>& rows, std::size_t own,
                   std::size_t pool_total) {
    own_step s;
    const std::vector<std::uint32_t> targets = fair_targets(budget, rows);
    s.target = targets.at(own);
    s.settled = true;
    for (std::size_t i = 0; i < rows.size(); ++i)
        if (i != own && rows[i].granted != targets[i]) s.settled = false;
    s = own_move(s, budget, rows, own, pool_total);
    s.settled = s.settled && s.granted == s.target;
    return s;
}

}  // namespace respool::pg::detail::budget
