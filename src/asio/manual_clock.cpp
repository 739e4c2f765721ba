// manual_clock: time moves only in advance(). Rings run under the clock's mutex, as with the default
// clock, so cancel() has the same guarantee.
#include <respool/clock.hpp>

#include "alarm_schedule.hpp"

#include <mutex>

namespace respool {

struct manual_clock::state {
    mutable std::mutex m;
    time_point now = time_point{} + std::chrono::hours(1);
    detail::alarm_schedule alarms;
};

manual_clock::manual_clock() : s_(std::make_unique<state>()) {}
manual_clock::~manual_clock() = default;

pool_clock::time_point manual_clock::now() const noexcept {
    std::lock_guard<std::mutex> g(s_->m);
    return s_->now;
}

void manual_clock::set(alarm& a, time_point at) {
    std::lock_guard<std::mutex> g(s_->m);
    s_->alarms.set(a, at);
}

void manual_clock::cancel(alarm& a) noexcept {
    std::lock_guard<std::mutex> g(s_->m);
    s_->alarms.cancel(a);
}

void manual_clock::advance(duration d) {
    std::lock_guard<std::mutex> g(s_->m);
    const time_point target = s_->now + d;
    for (auto next = s_->alarms.next(); next && *next <= target; next = s_->alarms.next()) {
        if (*next > s_->now) s_->now = *next;
        s_->alarms.pop_due(s_->now)->ring();
    }
    s_->now = target;
}

std::optional<pool_clock::time_point> manual_clock::next_alarm() const {
    std::lock_guard<std::mutex> g(s_->m);
    return s_->alarms.next();
}

std::size_t manual_clock::alarms() const {
    std::lock_guard<std::mutex> g(s_->m);
    return s_->alarms.size();
}

}  // namespace respool
