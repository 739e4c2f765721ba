#include "log.hpp"

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace respool_cli::log {
namespace {

std::atomic<int> threshold{static_cast<int>(level::info)};
std::mutex write_lock;

const char* name_of(level l) {
    switch (l) {
    case level::error: return "error";
    case level::warn: return "warn ";
    case level::info: return "info ";
    case level::debug: return "debug";
    }
    return "info ";
}

}  // namespace

std::optional<level> parse_level(std::string_view text) {
    if (text == "error") return level::error;
    if (text == "warn") return level::warn;
    if (text == "info") return level::info;
    if (text == "debug") return level::debug;
    return std::nullopt;
}

std::string level_error(const std::string& text) {
    if (parse_level(text)) return {};
    return "'" + text + "' is not a log level (error, warn, info, debug)";
}

void set_level(level l) noexcept {
    threshold.store(static_cast<int>(l), std::memory_order_relaxed);
}

bool enabled(level l) noexcept {
    return static_cast<int>(l) <= threshold.load(std::memory_order_relaxed);
}

std::string one_line(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    bool blank = false;
    for (const char c : text) {
        if (c == '\n' || c == '\r' || c == '\t') {
            blank = true;
            continue;
        }
        if (blank && !out.empty() && out.back() != ' ') out += ' ';
        blank = false;
        out += c;
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
}

std::string rfc3339(std::chrono::system_clock::time_point t) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    const std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm utc{};
    gmtime_r(&secs, &utc);
    char buf[96];  // room for any int the fields could hold (the compiler checks it)
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1,
                  utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, static_cast<int>(ms % 1000));
    return buf;
}

void write(level l, std::string_view message) {
    if (!enabled(l)) return;
    const std::string line = rfc3339(std::chrono::system_clock::now()) + " " + name_of(l) +
                             " respool serve: " + one_line(message) + "\n";
    std::lock_guard<std::mutex> g(write_lock);
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
}

}  // namespace respool_cli::log
