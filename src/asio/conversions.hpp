// Conversions between the sans-io core's types and the public ones. The enums mirrored on both sides
// are checked here value by value, so a new enumerator on one side cannot silently shift the other.
#pragma once

#include <respool/error.hpp>
#include <respool/observer.hpp>
#include <respool/options.hpp>
#include <respool/stats.hpp>

#include "core/pool_core.hpp"

namespace respool::detail {

#define RESPOOL_SAME_ENUM(a, b) static_assert(static_cast<int>(a) == static_cast<int>(b), #a " != " #b)
RESPOOL_SAME_ENUM(core::circuit::closed, circuit_state::closed);
RESPOOL_SAME_ENUM(core::circuit::open, circuit_state::open);
RESPOOL_SAME_ENUM(core::circuit::half_open, circuit_state::half_open);
RESPOOL_SAME_ENUM(core::destroy_reason::closed, destroy_reason::closed);
RESPOOL_SAME_ENUM(core::destroy_reason::broken, destroy_reason::broken);
RESPOOL_SAME_ENUM(core::destroy_reason::poisoned, destroy_reason::poisoned);
RESPOOL_SAME_ENUM(core::destroy_reason::rejected, destroy_reason::rejected);
RESPOOL_SAME_ENUM(core::destroy_reason::unhealthy, destroy_reason::unhealthy);
RESPOOL_SAME_ENUM(core::destroy_reason::idle_timeout, destroy_reason::idle_timeout);
RESPOOL_SAME_ENUM(core::destroy_reason::lifetime, destroy_reason::lifetime);
#undef RESPOOL_SAME_ENUM

inline circuit_state to_public(core::circuit c) noexcept { return static_cast<circuit_state>(c); }
inline core::circuit to_core(circuit_state c) noexcept { return static_cast<core::circuit>(c); }
inline destroy_reason to_public(core::destroy_reason r) noexcept { return static_cast<destroy_reason>(r); }
inline core::destroy_reason to_core(destroy_reason r) noexcept { return static_cast<core::destroy_reason>(r); }

inline error_code to_error(core::status s) noexcept {
    switch (s) {
    case core::status::ok: return {};
    case core::status::closed: return errc::closed;
    case core::status::timeout: return errc::timeout;
    case core::status::cancelled: return errc::cancelled;
    case core::status::unavailable: return errc::unavailable;
    case core::status::exhausted: return errc::exhausted;
    case core::status::create_failed: return errc::create_failed;
    }
    return errc::create_failed;
}

// The factory's own error when it gave one, create_failed otherwise.
inline error_code creation_error(const error_code& ec) noexcept { return ec ? ec : error_code(errc::create_failed); }

pool_stats to_stats(const core::snapshot& s) noexcept;

}  // namespace respool::detail
