// A duration flag of the CLI, parsed into std::chrono::nanoseconds at the flag: the command's code
// gets a typed value, never the text. A malformed value is a CLI11 validation error naming the flag.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <string>

namespace respool_cli {

// Whether 0 is a value of the flag ("none", "off", "at once") or refused (a deadline that would
// expire before anything could happen).
enum class zero_duration { allowed, refused };

// Adds `name` to `cmd`: the value's text (duration.hpp) goes into `target`; --help shows `target` as
// it was (the default).
CLI::Option* add_duration_flag(CLI::App& cmd, const std::string& name, std::chrono::nanoseconds& target,
                               const std::string& help, zero_duration zero = zero_duration::allowed);

}  // namespace respool_cli
