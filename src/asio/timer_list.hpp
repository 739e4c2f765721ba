// A pool's one-shot timers in time order: lifecycle ticks, back-off, cool-down, hook deadlines, close
// grace periods. The pool sets its clock's alarm to the earliest of these and of its waiters'
// deadlines (the core keeps those). Guarded by the pool's lock; callbacks run on the pool's executor,
// outside the lock.
#pragma once

#include <respool/clock.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace respool::detail {

class timer_list {
public:
    using time_point = pool_clock::time_point;
    using callback = std::function<void()>;

    struct handle {
        time_point at{};
        std::uint64_t id = 0;  // 0: not set
        explicit operator bool() const noexcept { return id != 0; }
    };

    handle add(time_point at, callback fn) {
        handle h{at, ++last_id_};
        entries_.emplace(key{at, h.id}, std::move(fn));
        return h;
    }
    // Forgets the timer; false when it already fired or was never set. Resets the handle either way.
    bool cancel(handle& h) noexcept {
        if (!h) return false;
        const bool found = entries_.erase(key{h.at, h.id}) != 0;
        h = {};
        return found;
    }
    [[nodiscard]] std::optional<time_point> next() const noexcept {
        if (entries_.empty()) return std::nullopt;
        return entries_.begin()->first.first;
    }
    // Removes and returns the earliest callback due at `now` (ties in the order they were added), or an
    // empty one. Allocates nothing.
    callback pop_due(time_point now) noexcept {
        if (entries_.empty() || entries_.begin()->first.first > now) return {};
        callback f = std::move(entries_.begin()->second);
        entries_.erase(entries_.begin());
        return f;
    }
    [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }

private:
    using key = std::pair<time_point, std::uint64_t>;
    std::map<key, callback> entries_;
    std::uint64_t last_id_ = 0;
};

}  // namespace respool::detail
