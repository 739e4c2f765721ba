// `promtool check metrics` (Debian's prometheus package, installed by scripts/bootstrap) on what the
// writers produce: several pools with extra labels, every histogram filled, request metrics. A missing
// promtool fails the test: it is never skipped.
#include <respool/http/metrics.hpp>
#include <respool/http/request_metrics.hpp>

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#ifndef RESPOOL_PROMTOOL
#error "RESPOOL_PROMTOOL (the path of promtool) comes from tests/CMakeLists.txt"
#endif

namespace {

namespace http = respool::http;
using namespace std::chrono_literals;

struct check_result {
    int exit_code;
    std::string output;
};

// Runs `promtool check metrics` with `text` on its standard input.
check_result promtool_check(const std::string& text) {
    const auto file =
        std::filesystem::temp_directory_path() / ("respool-promtool-" + std::to_string(::getpid()) + ".prom");
    std::ofstream(file, std::ios::binary) << text;
    const std::string cmd = std::string(RESPOOL_PROMTOOL) + " check metrics < '" + file.string() + "' 2>&1";
    check_result r{-1, {}};
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
        char buf[4096];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
        const int status = ::pclose(p);
        r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    std::filesystem::remove(file);
    return r;
}

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
