// The shared connection budget against a real server with few connections (max_connections 40: the
// pg_cluster_budget fixture). Several pg::pools in one process, each its own member, under load; a
// sampler thread reads pg_stat_activity and the table every 50 ms and checks the members never hold
// more than the budget B. Pools join, leave and one "crashes" (its member stops without deleting its
// row); the shares settle within the promised times and no statement meets "too many connections".
// A schema the role has no rights on (or none) leaves the pool at its configured max with a log line.
#include "pg_test_support.hpp"
#include "pool_access.hpp"

#include <respool/pg/pool.hpp>

#include <atomic>
#include <boost/asio/detached.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace {

using namespace pg_test;
using clock_type = std::chrono::steady_clock;

const std::string role = "budget_app";

// The fixture's conninfo with the test role instead of the superuser.
std::string member_conninfo() {
    std::string c = conninfo();
    auto replace = [&](const std::string& key, const std::string& value) {
        const auto at = c.find(key + "=");
        ASSERT_NE(at, std::string::npos) << key;
        auto end = c.find(' ', at);
        c.replace(at, (end == std::string::npos ? c.size() : end) - at, key + "=" + value);
    };
    replace("user", role);
    replace("password", "budget-secret");
    return c;
}

// The instance id of member <key> (a, b, c, d).
std::string instance_of(const std::string& key) {
    return "00000000-0000-4000-8000-00000000000" + key;
}

// Lines the pool logged.
struct captured_log : respool::log_sink {
    std::mutex m;
    std::vector<std::string> lines;
    void log(respool::log_level, std::string_view message) override {
        std::lock_guard lock(m);
        lines.emplace_back(message);
    }
    std::string all() {
        std::lock_guard lock(m);
        std::string s;
        for (auto& l : lines) s += l + "\n";
        return s;
    }
};

// One member: a pool and its workers (each runs short statements in a loop until told to stop).
struct member {
    explicit member(std::string k) : key(std::move(k)) {}
    std::string key;  // its pooled connections' application_name is budget_<key>
    std::unique_ptr<pg::pool> db;
    std::shared_ptr<bool> stop = std::make_shared<bool>(false);
    std::shared_ptr<int> running = std::make_shared<int>(0);
    std::shared_ptr<std::uint64_t> ok = std::make_shared<std::uint64_t>(0);
};

struct counters {
    std::uint64_t too_many = 0;  // 53300
    std::uint64_t other = 0;
    std::string last_other;
};

asio::awaitable<void> worker(pg::pool& db, std::shared_ptr<bool> stop, std::shared_ptr<int> running,
                             std::shared_ptr<std::uint64_t> ok, counters& errors) {
    ++*running;
    while (!*stop) {
        respool::diagnostics d;
        auto [ec, r] =
            co_await db.async_query("SELECT pg_sleep(0.2)", &d, asio::as_tuple(asio::use_awaitable));
        if (!ec) {
            ++*ok;
        } else if (d.message.find("53300") != std::string::npos ||
                   d.message.find("too many") != std::string::npos) {
            ++errors.too_many;
        } else {
            ++errors.other;
            errors.last_other = d.message;
        }
    }
    --*running;
}

class pg_budget : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty()) GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set (run through ctest)";
        run([]() -> asio::awaitable<void> {
            admin a = co_await admin::open();
            co_await a.query(
                "DROP SCHEMA IF EXISTS budget CASCADE; DROP SCHEMA IF EXISTS locked CASCADE;"
                "DROP ROLE IF EXISTS " +
                role);
            co_await a.query("CREATE ROLE " + role +
                             " LOGIN PASSWORD 'budget-secret';"
                             "CREATE SCHEMA budget AUTHORIZATION " +
                             role + "; CREATE SCHEMA locked");
        });
    }
};

// Waits (on the io_context, up to `limit`) until every member's share is at its target and every
// member counts `n` members; returns how long it took, or limit + 1 s.
asio::awaitable<clock_type::duration> settle(std::vector<member*> ms, std::size_t n,
                                             clock_type::duration limit) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    const auto start = clock_type::now();
    while (clock_type::now() - start < limit) {
        bool done = true;
        for (member* m : ms) {
            const pg::budget_stats s = m->db->budget_stats();
            done = done && s.degraded.empty() && s.members == n && s.granted == s.target && s.granted >= 2;
        }
        if (done) co_return clock_type::now() - start;
        t.expires_after(20ms);
        co_await t.async_wait(asio::use_awaitable);
    }
    co_return limit + 1s;
}

TEST_F(pg_budget, members_share_the_server_without_exceeding_it_through_join_leave_and_crash) {
    // B = max_connections 40 - superuser_reserved_connections 3 - reserve 3 = 34.
    constexpr std::int64_t B = 34;
    std::atomic<bool> sampling{true};
    std::atomic<std::int64_t> worst_physical{0}, worst_granted{0};
    std::atomic<std::uint64_t> samples{0};
    std::atomic<std::int64_t> worst_excess{-1};
    std::string excess_detail;  // the sampler's, read after it ended
    const auto test_start = clock_type::now();
    std::string sampler_error;
    std::thread sampler([&] {
        try {
            run([&]() -> asio::awaitable<void> {
                admin a = co_await admin::open();
                asio::steady_timer t(co_await asio::this_coro::executor);
                // The first member creates the table; no pool connects before that.
                while (sampling &&
                       co_await a.count("SELECT count(*) FROM pg_class WHERE oid = "
                                        "coalesce(to_regclass('budget.respool_budget'), 0)") == 0) {
                    t.expires_after(10ms);
                    co_await t.async_wait(asio::use_awaitable);
                }
                // Each check reads the shares, then the connections, then the shares again: a member
                // writes a larger share before it connects and a smaller one after its connections
                // closed, so its connections never exceed the larger of the two readings.
                auto shares = [&]() -> asio::awaitable<std::map<std::string, std::int64_t>> {
                    pg::result r =
                        co_await a.query("SELECT instance::text, granted FROM budget.respool_budget");
                    std::map<std::string, std::int64_t> out;
                    std::int64_t sum = 0;
                    for (std::size_t i = 0; i < r.rows(); ++i) {
                        out[std::string(r.text(i, 0))] = r.get<std::int64_t>(i, 1);
                        sum += r.get<std::int64_t>(i, 1);
                    }
                    worst_granted = std::max<std::int64_t>(worst_granted, sum);
                    co_return out;
                };
                while (sampling) {
                    const auto before = co_await shares();
                    pg::result r = co_await a.query(
                        "SELECT application_name, count(*) FROM pg_stat_activity WHERE usename = '" + role +
                        "' GROUP BY 1");
                    const auto after = co_await shares();
                    std::int64_t pooled = 0, members = 0;
                    for (std::size_t i = 0; i < r.rows(); ++i) {
                        const std::string app(r.text(i, 0));
                        const auto n = r.get<std::int64_t>(i, 1);
                        if (app == "respool budget member") {
                            members += n;
                            continue;
                        }
                        pooled += n;
                        const std::string id = instance_of(app.substr(app.size() - 1));
                        std::int64_t g = 0;
                        if (auto it = before.find(id); it != before.end()) g = it->second;
                        if (auto it = after.find(id); it != after.end()) g = std::max(g, it->second);
                        const std::int64_t excess = n - std::max<std::int64_t>(g - 1, 0);
                        if (excess > worst_excess) {
                            worst_excess = excess;
                            const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                clock_type::now() - test_start);
                            excess_detail = app + ": " + std::to_string(n) + " connections, granted " +
                                            std::to_string(before.count(id) ? before.at(id) : -1) + " then " +
                                            std::to_string(after.count(id) ? after.at(id) : -1) + " at " +
                                            std::to_string(ms.count()) + " ms";
                        }
                    }
                    worst_physical = std::max<std::int64_t>(worst_physical, pooled + members);
                    ++samples;
                    t.expires_after(50ms);
                    co_await t.async_wait(asio::use_awaitable);
                }
            });
        } catch (const std::exception& e) {
            sampler_error = e.what();
        }
    });

    asio::io_context io;
    counters errors;
    const std::string info = member_conninfo();
    auto make = [&](member& m) {
        pg::pool_config c{.conninfo = info + " application_name=budget_" + m.key, .max = 20};
        c.budget = pg::budget_config{.schema = "budget", .instance_id = instance_of(m.key)};
        m.db = std::make_unique<pg::pool>(io.get_executor(), c);
        for (int i = 0; i < 25; ++i)  // more than max: demand max + 1 = 21 each, 63 for three > B
            asio::co_spawn(io, worker(*m.db, m.stop, m.running, m.ok, errors), asio::detached);
    };
    member a{"a"}, b{"b"}, c{"c"}, d{"d"};
    clock_type::duration joined{}, left{}, crashed{}, first{};
    // (Built outside the coroutine: GCC cannot copy an initializer_list's array inside one.)
    const std::vector<member*> abc{&a, &b, &c}, abcd{&a, &b, &c, &d}, abd{&a, &b, &d}, ab{&a, &b};
    auto body = [&]() -> asio::awaitable<void> {
        asio::steady_timer t(co_await asio::this_coro::executor);
        make(a);
        make(b);
        make(c);
        first = co_await settle(abc, 3, 10s);
        // Sum of the shares is the budget (the demand exceeds it), split about evenly.
        std::uint64_t sum = 0;
        sum = a.db->budget_stats().granted + b.db->budget_stats().granted + c.db->budget_stats().granted;
        EXPECT_EQ(sum, static_cast<std::uint64_t>(B));
        EXPECT_EQ(a.db->budget_stats().budget, static_cast<std::uint32_t>(B));

        make(d);  // join
        joined = co_await settle(abcd, 4, 10s);

        *c.stop = true;  // leave: its workers end, then the pool closes (its row deleted once drained)
        while (*c.running > 0) {
            t.expires_after(10ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        const auto leave_at = clock_type::now();
        c.db->close();
        co_await settle(abd, 3, 10s);
        left = clock_type::now() - leave_at;

        // Crash: d's member stops as a killed process would (row left behind), its connections go.
        *d.stop = true;
        respool::pg::detail::pool_access::budget_vanish(*d.db);
        while (*d.running > 0) {
            t.expires_after(10ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        const auto crash_at = clock_type::now();
        d.db->close();
        co_await settle(ab, 2, 15s);
        crashed = clock_type::now() - crash_at;

        *a.stop = *b.stop = true;
        while (*a.running + *b.running > 0) {
            t.expires_after(10ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        a.db->close();
        b.db->close();
    };
    auto done = asio::co_spawn(io, body(), asio::use_future);
    io.run_for(120s);
    sampling = false;
    sampler.join();
    ASSERT_EQ(done.wait_for(0s), std::future_status::ready);
    done.get();

    std::printf(
        "settle: first %lld ms, join %lld ms, leave %lld ms, crash %lld ms; %llu samples, role backends max "
        "%lld, granted sum max %lld, member excess %lld\n",
        static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(first).count()),
        static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(joined).count()),
        static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(left).count()),
        static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(crashed).count()),
        static_cast<unsigned long long>(samples.load()), static_cast<long long>(worst_physical.load()),
        static_cast<long long>(worst_granted.load()), static_cast<long long>(worst_excess.load()));
    EXPECT_TRUE(sampler_error.empty()) << sampler_error;
    EXPECT_GT(samples.load(), 20u);
    // Every member within its granted and the sum of granted within B: the members' pooled and member
    // connections within B, but for the member connection of a member still waiting for its first
    // share, which the reserve holds (B + reserve is what the server accepts).
    EXPECT_LE(worst_physical.load(), B + 3);
    EXPECT_LE(worst_granted.load(), B);
    EXPECT_LE(worst_excess.load(), 0)
        << "a member held more pooled connections than its granted - 1: " << excess_detail;
    EXPECT_LT(first, 5s);
    EXPECT_LT(joined, 2s);
    EXPECT_LT(left, 2s);
    EXPECT_LT(crashed, 6s);
    EXPECT_EQ(errors.too_many, 0u);
    EXPECT_EQ(errors.other, 0u) << errors.last_other;
    for (member* m : {&a, &b, &c, &d}) EXPECT_GT(*m->ok, 0u);
}

TEST_F(pg_budget, a_schema_without_rights_or_none_keeps_the_configured_max_with_one_log_line) {
    for (const std::string schema : {"locked", "nope"}) {
        asio::io_context io;
        pg::pool_config c{.conninfo = member_conninfo(), .max = 5};
        c.budget = pg::budget_config{.schema = schema};
        pg::pool db(io.get_executor(), c);
        auto log = std::make_shared<captured_log>();
        db.base().set_log_sink(log);
        auto body = [&]() -> asio::awaitable<void> {
            asio::steady_timer t(co_await asio::this_coro::executor);
            for (int i = 0; i < 250 && db.budget_stats().degraded.empty(); ++i) {
                t.expires_after(20ms);
                co_await t.async_wait(asio::use_awaitable);
            }
            // Still usable, at its own max.
            auto [ec, r] = co_await db.async_query("SELECT 1", asio::as_tuple(asio::use_awaitable));
            EXPECT_FALSE(ec) << ec.message();
            // A few more ticks: retried quietly.
            t.expires_after(2500ms);
            co_await t.async_wait(asio::use_awaitable);
            db.close();
        };
        auto done = asio::co_spawn(io, body(), asio::use_future);
        io.run_for(30s);
        done.get();
        const pg::budget_stats s = db.budget_stats();
        EXPECT_TRUE(s.enabled);
        EXPECT_FALSE(s.degraded.empty());
        EXPECT_EQ(db.stats().max, 5u);
        const std::string lines = log->all();
        EXPECT_NE(lines.find("budget: cannot use " + schema + ".respool_budget: "), std::string::npos)
            << lines;
        EXPECT_NE(lines.find("; keeping max 5"), std::string::npos) << lines;
        EXPECT_NE(lines.find(schema == "locked" ? "permission denied" : "does not exist"), std::string::npos)
            << lines;
        EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 1) << lines;  // once, not every tick
        EXPECT_EQ(lines.find("budget-secret"), std::string::npos);
    }
}

TEST_F(pg_budget, a_failed_heartbeat_keeps_the_share_instead_of_taking_the_configured_max) {
    asio::io_context io;
    pg::pool_config c{.conninfo = member_conninfo(), .max = 20};
    c.budget = pg::budget_config{.schema = "budget"};
    pg::pool db(io.get_executor(), c);
    auto log = std::make_shared<captured_log>();
    db.base().set_log_sink(log);
    std::uint32_t most = 0;
    std::uint64_t ticks_before = 0;
    auto body = [&]() -> asio::awaitable<void> {
        asio::steady_timer t(co_await asio::this_coro::executor);
        admin a = co_await admin::open();
        for (int i = 0; i < 250 && db.budget_stats().ticks == 0; ++i) {
            t.expires_after(20ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        EXPECT_EQ(db.budget_stats().granted, 2u);  // idle: its member connection and one pooled one
        EXPECT_EQ(db.stats().max, 1u);
        auto until_next_tick = [&]() -> asio::awaitable<void> {
            ticks_before = db.budget_stats().ticks;
            for (int i = 0; i < 250 && db.budget_stats().ticks <= ticks_before; ++i) {
                most = std::max(most, db.stats().max);
                t.expires_after(20ms);
                co_await t.async_wait(asio::use_awaitable);
            }
            most = std::max(most, db.stats().max);
        };
        // The member connection dies under it (seen while it waits for the others' news, or by the
        // next heartbeat): it reconnects and shares again, never above its share meanwhile.
        co_await a.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'respool budget "
            "member'");
        co_await until_next_tick();
        EXPECT_GT(db.budget_stats().ticks, ticks_before) << "the member did not share again";
        // A heartbeat that fails on the table itself (its rights revoked for a while): logged, and the
        // share kept while the row lives.
        co_await a.query("REVOKE ALL ON budget.respool_budget FROM " + role);
        for (int i = 0; i < 250 && log->all().find("budget: a heartbeat failed: ") == std::string::npos;
             ++i) {
            most = std::max(most, db.stats().max);
            t.expires_after(20ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        co_await a.query("GRANT ALL ON budget.respool_budget TO " + role);
        co_await until_next_tick();
        db.close();
    };
    auto done = asio::co_spawn(io, body(), asio::use_future);
    io.run_for(30s);
    done.get();
    EXPECT_GT(db.budget_stats().ticks, ticks_before) << "the member did not share again";
    EXPECT_EQ(most, 1u) << "the pool took more than its share while its row was alive";
    EXPECT_NE(log->all().find("budget: a heartbeat failed: "), std::string::npos) << log->all();
    EXPECT_NE(log->all().find("permission denied"), std::string::npos) << log->all();
}

TEST(pg_budget_config, bad_settings_name_what_is_wrong) {
    auto with = [](pg::budget_config b) {
        pg::pool_config c{.conninfo = "host=127.0.0.1"};
        c.budget = b;
        asio::io_context io;
        try {
            pg::pool p(io.get_executor(), c);
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(with({}).find("budget: schema is required"), std::string::npos);
    EXPECT_NE(with({.schema = "s", .heartbeat = 0ms}).find("heartbeat must be positive"), std::string::npos);
    EXPECT_NE(with({.schema = "s", .lease = 500ms}).find("lease must exceed heartbeat"), std::string::npos);
    EXPECT_NE(with({.schema = "s", .instance_id = "web-1"}).find("instance_id \"web-1\" is not a UUID"),
              std::string::npos);
}

}  // namespace
