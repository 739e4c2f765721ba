// `promtool check metrics` (Debian's prometheus package, installed by scripts/bootstrap) on what the
// writers produce: several pools with extra labels, every histogram filled, request metrics. A missing
// promtool fails the test: it is never skipped.
#include <respool/http/metrics.hpp>
#include <respool/http/request_metrics.hpp>

#include "promtool_check.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace {

namespace http = respool::http;
using namespace std::chrono_literals;

TEST(http_promtool, promtool_is_installed) {
    ASSERT_TRUE(std::filesystem::exists(RESPOOL_PROMTOOL))
        << RESPOOL_PROMTOOL << " is missing: run scripts/bootstrap (Debian package prometheus)";
}

TEST(http_promtool, refuses_what_the_writers_must_not_do) {
    // The check can fail: a counter without _total, and a family written twice (once per pool).
    const auto unsuffixed = promtool_check("# HELP respool_x Bad.\n# TYPE respool_x counter\nrespool_x 1\n");
    EXPECT_NE(unsuffixed.exit_code, 0) << unsuffixed.output;
    const auto twice = promtool_check(
        "# HELP a_total A.\n# TYPE a_total counter\na_total{pool=\"w\"} 1\n"
        "# HELP a_total A.\n# TYPE a_total counter\na_total{pool=\"r\"} 1\n");
    EXPECT_NE(twice.exit_code, 0) << twice.output;
}

TEST(http_promtool, accepts_pool_and_request_metrics) {
    respool::pool_stats writer;
    writer.idle = 1;
    writer.total = 1;
    writer.max = 1;
    writer.acquires = 10;
    writer.wait_time.record(5us);
    writer.wait_time.record(30s);
    writer.hold_time.record(2ms);
    writer.create_time.record(7ms);
    writer.min = 1;
    respool::pool_stats reader = writer;
    reader.circuit = respool::circuit_state::open;

    http::request_metrics thread0, thread1;
    thread0.record("/kv/{key}", "GET", 200, 800us);
    thread1.record("/kv/{key}", "GET", 503, 2ms);
    thread1.record("/kv/{key}/incr", "POST", 200, 3ms);
    thread1.record("/metrics", "GET", 200, 100us);

    std::string out;
    http::write_pool_metrics(out, {{{{"pool", "writer"}, {"thread", "0"}}, writer},
                                   {{{"pool", "reader"}, {"thread", "0"}}, reader},
                                   {{{"pool", "writer"}, {"thread", "1"}}, {}}});
    http::write_request_metrics(out, {&thread0, &thread1});
    http::write_build_info(out);
    const auto r = promtool_check(out);
    EXPECT_EQ(r.exit_code, 0) << r.output << "\n--- for:\n" << out;
    EXPECT_EQ(r.output, "") << "promtool's lint found problems";
}

TEST(http_promtool, accepts_request_metrics_with_no_request_yet) {
    http::request_metrics m;
    std::string out;
    m.write(out);
    const auto r = promtool_check(out);
    EXPECT_EQ(r.exit_code, 0) << r.output << "\n--- for:\n" << out;
}

}  // namespace
