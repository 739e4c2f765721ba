// The alarms of one clock in time order (the default clock's thread and manual_clock share it).
// Not thread-safe: each clock guards it with its own mutex.
#pragma once

#include <respool/clock.hpp>

#include <map>
#include <optional>
#include <unordered_map>

namespace respool::detail {

class alarm_schedule {
public:
    using time_point = pool_clock::time_point;

    // Returns true when `a` became the earliest alarm.
    bool set(pool_clock::alarm& a, time_point at) {
        cancel(a);
        auto it = by_time_.emplace(at, &a);
        by_alarm_.emplace(&a, it);
        return it == by_time_.begin();
    }
    void cancel(pool_clock::alarm& a) noexcept {
        auto it = by_alarm_.find(&a);
        if (it == by_alarm_.end()) return;
        by_time_.erase(it->second);
        by_alarm_.erase(it);
    }
    [[nodiscard]] std::optional<time_point> next() const {
        if (by_time_.empty()) return std::nullopt;
        return by_time_.begin()->first;
    }
    // Removes and returns the earliest alarm due at `now`, or nullptr.
    pool_clock::alarm* pop_due(time_point now) {
        if (by_time_.empty() || by_time_.begin()->first > now) return nullptr;
        pool_clock::alarm* a = by_time_.begin()->second;
        by_alarm_.erase(a);
        by_time_.erase(by_time_.begin());
        return a;
    }
    [[nodiscard]] std::size_t size() const noexcept { return by_alarm_.size(); }

private:
    std::multimap<time_point, pool_clock::alarm*> by_time_;
    std::unordered_map<pool_clock::alarm*, std::multimap<time_point, pool_clock::alarm*>::iterator> by_alarm_;
};

}  // namespace respool::detail
