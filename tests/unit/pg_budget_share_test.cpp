// The connection budget's allocation rule (src/pg/budget_share.hpp) without a server or a clock: the
// division of the budget, the steps that never let the sum of granted exceed it, and a randomized run
// of members joining, leaving, crashing and changing demand.
#include "budget_share.hpp"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <random>

using namespace respool::pg::detail::budget;

namespace {

member_row row(std::string id, std::uint32_t demand, std::uint32_t granted = 0) {
    return member_row{std::move(id), demand, granted};
}

std::uint64_t sum(const std::vector<std::uint32_t>& v) {
    return std::accumulate(v.begin(), v.end(), std::uint64_t{0});
}

TEST(BudgetOf, SubtractsReservedSlotsAndTakesTheRoleLimit) {
    EXPECT_EQ(budget_of(40, 3, 0, 3, -1), 34u);
    EXPECT_EQ(budget_of(100, 3, 2, 5, -1), 90u);
    EXPECT_EQ(budget_of(100, 3, 0, 3, 20), 20u);   // the role's limit is lower
    EXPECT_EQ(budget_of(100, 3, 0, 3, 500), 94u);  // the server's is lower
    EXPECT_EQ(budget_of(5, 3, 0, 3, -1), 0u);      // nothing left: never negative
}

TEST(DemandOf, PeakPlusTheMemberConnectionCappedByMax) {
    EXPECT_EQ(demand_of(0, 16), 2u);  // an idle pool still asks for one pooled connection
    EXPECT_EQ(demand_of(7, 16), 8u);
    EXPECT_EQ(demand_of(100, 16), 17u);
}

TEST(FairTargets, EveryoneGetsItsDemandWhenTheBudgetSuffices) {
    const auto t = fair_targets(30, {row("a", 5), row("b", 10), row("c", 1)});
    EXPECT_EQ(t, (std::vector<std::uint32_t>{5, 10, 1}));  // the rest stays free for newcomers
}

TEST(FairTargets, WeightedByDemandNeverAboveIt) {
    // 30 for demands 10 and 40: 2 each first, then by share per unit of demand: 6 and 24.
    const auto t = fair_targets(30, {row("a", 10), row("b", 40)});
    EXPECT_EQ(sum(t), 30u);
    EXPECT_EQ(t[0], 6u);
    EXPECT_EQ(t[1], 24u);
    // Everyone gets the same fraction of its demand (20/63 here): the small one keeps its minimum of 2,
    // the two large ones divide the rest evenly.
    const auto u = fair_targets(20, {row("a", 3), row("b", 30), row("c", 30)});
    EXPECT_EQ(u[0], 2u);
    EXPECT_EQ(u[1] + u[2], 18u);
    EXPECT_LE(std::max(u[1], u[2]) - std::min(u[1], u[2]), 1u);
}

TEST(FairTargets, EveryMemberGetsTwoWhenTheBudgetAllows) {
    // Demand 100 against demand 3: the small one still gets 2 at least (it got 3: its demand).
    const auto t = fair_targets(12, {row("a", 100), row("b", 3), row("c", 2)});
    EXPECT_GE(t[1], 2u);
    EXPECT_EQ(t[2], 2u);
    EXPECT_EQ(sum(t), 12u);
}

TEST(FairTargets, BudgetSmallerThanTwicePerMemberSeatsHoldersFirst) {
    // 5 connections, 3 members wanting 10 each: two get 2 (holders first, then by id), one gets 0,
    // the fifth connection goes to a seated member.
    const auto t = fair_targets(5, {row("c", 10, 2), row("a", 10, 0), row("b", 10, 2)});
    EXPECT_EQ(t[1], 0u);  // "a" is first by id but holds nothing: the holders keep their seats
    EXPECT_GE(t[0], 2u);
    EXPECT_GE(t[2], 2u);
    EXPECT_EQ(sum(t), 5u);
    EXPECT_EQ(fair_targets(0, {row("a", 5)}), (std::vector<std::uint32_t>{0}));
}

TEST(NextStep, AShrinkerKeepsItsGrantedUntilItsPoolIsDrained) {
    // "a" holds 20 (19 pooled), "b" joins wanting 20: B = 20, so "a" is to go down to 10.
    std::vector<member_row> rows{row("a", 20, 20), row("b", 20, 0)};
    own_step s = next_step(20, rows, 0, 19);
    EXPECT_EQ(s.target, 10u);
    EXPECT_EQ(s.pool_cap, 9u);       // lowered now
    EXPECT_EQ(s.granted, 20u);       // but still holds 19 pooled: nothing is given back yet
    s = next_step(20, rows, 0, 14);  // some leases came back
    EXPECT_EQ(s.granted, 15u);       // gives back what it no longer holds
    s = next_step(20, rows, 0, 9);   // drained
    EXPECT_EQ(s.granted, 10u);
}

TEST(NextStep, AGrowerTakesOnlyWhatIsFree) {
    std::vector<member_row> rows{row("a", 20, 20), row("b", 20, 0)};
    own_step s = next_step(20, rows, 1, 0);
    EXPECT_EQ(s.target, 10u);
    EXPECT_EQ(s.granted, 0u);  // all 20 are "a"'s still: "b" waits
    EXPECT_EQ(s.pool_cap, 0u);
    rows[0].granted = 15;
    s = next_step(20, rows, 1, 0);
    EXPECT_EQ(s.granted, 5u);
    EXPECT_EQ(s.pool_cap, 4u);
}

TEST(NextStep, SettledOnlyWhenEveryRowIsAtItsTarget) {
    // "b" has joined: "a" must shrink and "b" grow. Each member sees that someone is moving (and looks
    // again sooner), even the one whose own share is already right.
    std::vector<member_row> rows{row("a", 20, 20), row("b", 20, 2), row("c", 1, 1)};
    EXPECT_FALSE(next_step(23, rows, 2, 0).settled);  // "c" is at its target, the others are not
    EXPECT_FALSE(next_step(23, rows, 0, 19).settled);
    rows = {row("a", 20, 11), row("b", 20, 11), row("c", 1, 1)};
    EXPECT_TRUE(next_step(23, rows, 2, 0).settled);
    EXPECT_TRUE(next_step(23, rows, 0, 10).settled);
    // Its own move is part of it: a grower that can take its target now is settled after this tick.
    rows = {row("a", 20, 11), row("b", 20, 5), row("c", 1, 1)};
    const own_step s = next_step(23, rows, 1, 4);
    EXPECT_EQ(s.granted, 11u);
    EXPECT_TRUE(s.settled);
}

// A randomized run: members join, leave (after draining), crash (row and connections gone at once)
// and change demand; their pools take every connection their cap allows at once and give connections
// back only now and then. After every tick the sum of granted is within B, and every member's pooled
// connections are within its granted.
struct sim_member {
    std::uint32_t demand = 1;
    std::uint32_t granted = 0;
    std::size_t cap = 0;    // its pool's max
    std::size_t total = 0;  // pooled connections it holds
    std::size_t want = 0;   // in use + waiting: what its pool would hold given the room
};

struct simulation {
    std::uint32_t budget;
    std::map<std::string, sim_member> members;

    std::vector<member_row> rows() const {
        std::vector<member_row> r;
        for (const auto& [id, m] : members) r.push_back(row(id, m.demand, m.granted));
        return r;
    }
    void tick(const std::string& id) {
        auto r = rows();
        const std::size_t own = std::distance(members.begin(), members.find(id));
        sim_member& m = members.at(id);
        const own_step s = next_step(budget, r, own, m.total);
        m.granted = s.granted;
        m.cap = s.pool_cap;
        m.total = std::max(m.total > m.cap ? m.total : 0, std::min(m.cap, m.want));  // grows at once
    }
    void check() const {
        std::uint64_t granted = 0;
        for (const auto& [id, m] : members) {
            granted += m.granted;
            if (m.granted < 2)
                ASSERT_EQ(m.total, 0u) << id;
            else
                ASSERT_LE(m.total + 1, m.granted) << id;
        }
        ASSERT_LE(granted, budget);
    }
};

TEST(BudgetSimulation, SumOfGrantedNeverExceedsTheBudgetAndSharesConverge) {
    for (std::uint32_t seed = 1; seed <= 40; ++seed) {
        std::mt19937 rng(seed);
        simulation sim{std::uniform_int_distribution<std::uint32_t>(3, 60)(rng), {}};
        int next_id = 0;
        auto pick = [&]() -> std::string {
            auto it = sim.members.begin();
            std::advance(it, std::uniform_int_distribution<std::size_t>(0, sim.members.size() - 1)(rng));
            return it->first;
        };
        for (int step = 0; step < 400; ++step) {
            const int what = std::uniform_int_distribution<int>(0, 99)(rng);
            if (sim.members.empty() || what < 8) {  // join
                char id[16];
                std::snprintf(id, sizeof id, "m%04d", next_id++);
                const std::size_t want = std::uniform_int_distribution<std::size_t>(0, 30)(rng);
                sim.members[id] = sim_member{demand_of(want, 20), 0, 0, 0, std::min<std::size_t>(want, 20)};
            } else if (what < 12) {  // crash: its row expires, its connections die with it
                sim.members.erase(pick());
            } else if (what < 16) {  // graceful leave: drains, then deletes its row
                sim.members.erase(pick());
            } else if (what < 30) {  // demand changes
                sim_member& m = sim.members.at(pick());
                m.want = std::uniform_int_distribution<std::size_t>(0, 20)(rng);
                m.demand = demand_of(m.want, 20);
            } else if (what < 50) {  // leases come back: the pool drains down to its cap / its need
                sim_member& m = sim.members.at(pick());
                m.total = std::min(m.total, std::max(m.cap, std::size_t{0}));
            } else {
                sim.tick(pick());
            }
            ASSERT_NO_FATAL_FAILURE(sim.check()) << "seed " << seed << " step " << step;
        }
        // Nothing changes any more: every member reaches its target within a few rounds of ticks (each
        // member ticks once per round; pools drain between rounds).
        const auto ids = [&] {
            std::vector<std::string> v;
            for (const auto& [id, m] : sim.members) v.push_back(id);
            return v;
        }();
        bool settled = false;
        for (int round = 0; round < 4 && !settled; ++round) {
            for (const auto& id : ids) {
                sim.tick(id);
                ASSERT_NO_FATAL_FAILURE(sim.check());
            }
            for (auto& [id, m] : sim.members) m.total = std::min(m.total, m.cap);
            const auto targets = fair_targets(sim.budget, sim.rows());
            settled = true;
            std::size_t i = 0;
            for (const auto& [id, m] : sim.members) settled = settled && m.granted == targets[i++];
        }
        EXPECT_TRUE(settled) << "seed " << seed;
    }
}

}  // namespace
