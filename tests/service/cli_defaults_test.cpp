// A flag left at its default follows the flags given instead of contradicting them: `serve --max 1`
// starts (--min-idle, 2 by default, becomes 1), `--min-idle 20` alone raises --max to 20,
// `--connect-retry-max` below the library's initial back-off lowers that, one of --budget-heartbeat and
// --budget-lease alone moves the other; `simulate --max 1` runs.
// Two given flags that contradict still exit 2 naming both (cli_bad_flags_test.cpp).
#include "serve_support.hpp"

#include <gtest/gtest.h>

#include <csignal>

using namespace serve_test;

namespace {

// Nothing listens there: the service starts, its connects fail (no circuit: the breaker is off).
const std::string nowhere = "postgresql://u@127.0.0.1:1/db?connect_timeout=1";

// `serve` with these flags on `nowhere` reaches its ready line, then stops on SIGTERM.
void expect_serve_starts(const std::vector<std::string>& flags) {
    std::vector<std::string> args{"serve", "--db", nowhere, "--listen", "127.0.0.1:0", "--breaker-failures",
                                  "0"};
    args.insert(args.end(), flags.begin(), flags.end());
    serve_process p(args);
    EXPECT_NO_THROW(p.wait_listening()) << flags.front() << " " << flags.back();
    p.signal(SIGTERM);
    EXPECT_TRUE(p.wait_exit().has_value());
}

}  // namespace

TEST(cli_defaults, serve_with_only_max_1_starts) {
    expect_serve_starts({"--max", "1"});
}

TEST(cli_defaults, serve_with_only_min_idle_above_the_default_max_starts) {
    expect_serve_starts({"--min-idle", "20"});
}

TEST(cli_defaults, serve_with_a_connect_retry_max_below_the_library_s_initial_back_off_starts) {
    expect_serve_starts({"--connect-retry-max", "50ms"});
}

// The budget's timing: a --budget-heartbeat of 3 s alone raises the lease (3 s by default) to 9 s, a
// --budget-lease of 600 ms alone lowers the heartbeat (1 s by default) to 200 ms.
TEST(cli_defaults, serve_with_only_one_of_the_budget_heartbeat_and_lease_starts) {
    expect_serve_starts({"--budget", "auto", "--budget-schema", "ops", "--budget-heartbeat", "3s"});
    expect_serve_starts({"--budget", "auto", "--budget-schema", "ops", "--budget-lease", "600ms"});
}

TEST(cli_defaults, simulate_with_only_max_1_or_only_a_large_min_runs) {
    for (const char* flag : {"--max", "--min"}) {
        auto [status, out] = run_to_exit(
            {"simulate", "-q", "--duration", "200ms", flag, std::string(flag) == "--max" ? "1" : "20"});
        EXPECT_EQ(status, 0) << flag << ": " << out;
    }
}

TEST(cli_defaults, given_flags_that_contradict_still_exit_2_naming_both) {
    auto [status, out] = run_to_exit({"serve", "--db", nowhere, "--max", "1", "--min-idle", "2"});
    EXPECT_EQ(status, 2) << out;
    EXPECT_NE(out.find("--min-idle (2) must not exceed --max (1)"), std::string::npos) << out;
    std::tie(status, out) = run_to_exit({"demo", "--db", nowhere, "--max", "1", "--min-idle", "2"});
    EXPECT_EQ(status, 2) << out;
    EXPECT_NE(out.find("--min-idle (2) must not exceed --max (1)"), std::string::npos) << out;
    std::tie(status, out) = run_to_exit({"simulate", "--min", "2", "--max", "1"});
    EXPECT_EQ(status, 2) << out;
    EXPECT_NE(out.find("--min (2) must not exceed --max (1)"), std::string::npos) << out;
}
