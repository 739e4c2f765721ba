// Conversions between the sans-io core's vocabulary and the public one. The core uses the public
// enums and counters themselves (one list each); only its status needs a mapping to error codes.
#pragma once

#include <respool/error.hpp>
#include <respool/observer.hpp>
#include <respool/options.hpp>
#include <respool/stats.hpp>

#include "core/pool_core.hpp"

namespace respool::detail {

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
inline error_code creation_error(const error_code& ec) noexcept {
    return ec ? ec : error_code(errc::create_failed);
}

pool_stats to_stats(const core::snapshot& s) noexcept;

}  // namespace respool::detail
