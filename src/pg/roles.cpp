// Text forms of the cluster vocabulary (include/respool/pg/roles.hpp): the names of routes and roles
// as options, logs and metrics spell them, and PostgreSQL's "X/Y" form of an LSN.
#include <respool/pg/roles.hpp>

#include <charconv>
#include <cstdio>

namespace respool::pg {

std::string_view to_string(route r) noexcept {
    switch (r) {
    case route::primary: return "primary";
    case route::standby: return "standby";
    case route::prefer_standby: return "prefer-standby";
    }
    return "unknown";
}

std::string_view to_string(host_role r) noexcept {
    switch (r) {
    case host_role::unknown: return "unknown";
    case host_role::primary: return "primary";
    case host_role::standby: return "standby";
    case host_role::fenced: return "fenced";
    case host_role::down: return "down";
    }
    return "unknown";
}

std::optional<route> route_from_string(std::string_view text) noexcept {
    if (text == "primary") return route::primary;
    if (text == "standby") return route::standby;
    if (text == "prefer-standby" || text == "prefer_standby") return route::prefer_standby;
    return std::nullopt;
}

std::string to_string(commit_token t) {
    // PostgreSQL prints an LSN as its upper and lower 32 bits in upper-case hex without padding.
    char text[2 * 8 + 2];
    const int n = std::snprintf(text, sizeof text, "%X/%X", static_cast<unsigned>(t.lsn >> 32),
                                static_cast<unsigned>(t.lsn & 0xFFFFFFFFu));
    return std::string(text, static_cast<std::size_t>(n));
}

namespace {

// One half of an LSN: 1 to 8 hex digits (either case), nothing else.
std::optional<std::uint32_t> lsn_half(std::string_view text) noexcept {
    if (text.empty() || text.size() > 8) return std::nullopt;
    std::uint32_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
    if (ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
    return value;
}

}  // namespace

std::optional<commit_token> commit_token_from_string(std::string_view text) noexcept {
    const auto slash = text.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    const auto high = lsn_half(text.substr(0, slash));
    const auto low = lsn_half(text.substr(slash + 1));
    if (!high || !low) return std::nullopt;
    return commit_token{(std::uint64_t{*high} << 32) | *low};
}

}  // namespace respool::pg
