#include "duration_flag.hpp"

#include "duration.hpp"

namespace respool_cli {

namespace {

std::string positive_duration_error(const std::string& text) {
    if (std::string e = duration_error(text); !e.empty()) return e;
    if (parse_duration(text)->count() == 0) return "'" + text + "' must be above 0 (e.g. 250ms, 5s)";
    return {};
}

}  // namespace

CLI::Option* add_duration_flag(CLI::App& cmd, const std::string& name, std::chrono::nanoseconds& target,
                               const std::string& help, zero_duration zero) {
    // CLI11 runs the check before the function: the value parses when it is stored.
    return cmd
        .add_option_function<std::string>(
            name, [&target](const std::string& s) { target = *parse_duration(s); }, help)
        ->default_str(format_duration(target))
        ->check(CLI::Validator(zero == zero_duration::allowed ? duration_error : positive_duration_error,
                               "DURATION"));
}

}  // namespace respool_cli
