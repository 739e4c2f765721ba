// `respool demo` and `respool simulate` with wrong flag values: each exits 2 before doing anything, and
// the message names the flag (docs/10-bad-input.md). `respool serve`'s own cases are in
// serve_sqlite_test.cpp (bad_flags_and_urls_exit_2_naming_them).
#include "serve_support.hpp"

#include <gtest/gtest.h>

using namespace serve_test;

namespace {

struct bad {
    std::vector<std::string> args;
    std::string named;
};

void expect_exit_2_naming(const std::vector<bad>& cases) {
    for (const auto& c : cases) {
        auto [status, out] = run_to_exit(c.args);
        EXPECT_EQ(status, 2) << c.args[0] << " " << c.args[1] << " " << c.args.back() << ": " << out;
        EXPECT_NE(out.find(c.named), std::string::npos) << out;
    }
}

TEST(cli_bad_flags, demo_refuses_wrong_values_by_name) {
    expect_exit_2_naming({
        {{"demo", "--clients", "0"}, "--clients"},
        {{"demo", "--duration", "10"}, "--duration"},  // no unit
        {{"demo", "--mix", "1:2"}, "--mix"},
        {{"demo", "--keys", "0"}, "--keys"},
        {{"demo", "--value-size", "2000000"}, "--value-size"},
        {{"demo", "--threads", "0"}, "--threads"},
        {{"demo", "--db", "mysql://u@h/db"}, "--db"},
        {{"demo", "--borrow-timeout", "soon"}, "--borrow-timeout"},
    });
}

TEST(cli_bad_flags, simulate_refuses_wrong_values_by_name) {
    expect_exit_2_naming({
        {{"simulate", "--clients", "0"}, "--clients"},
        {{"simulate", "--hold", "5"}, "--hold"},  // no unit
        {{"simulate", "--failure-rate", "1.5"}, "--failure-rate"},
        {{"simulate", "--timeout", "later"}, "--timeout"},
        {{"simulate", "--leak-rate", "-0.1"}, "--leak-rate"},
    });
}

TEST(cli_bad_flags, an_unknown_subcommand_or_flag_exits_2) {
    expect_exit_2_naming({
        {{"serve-it", "--x"}, "serve-it"},
        {{"demo", "--bogus"}, "--bogus"},
        {{"simulate", "--bogus"}, "--bogus"},
    });
}

}  // namespace
