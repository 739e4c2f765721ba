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

manual_clock::manual_clock() : state_(std::make_unique<state>()) {}
manual_clock::~manual_clock() = default;

pool_clock::time_point manual_clock::now() const noexcept {
    std::lock_guard<std::mutex> g(state_->m);
    return state_->now;
}

void manual_clock::set(alarm& a, time_point at) {
    std::lock_guard<std::mutex> g(state_->m);
    state_->alarms.set(a, at);
}

void manual_clock::cancel(alarm& a) noexcept {
    std::lock_guard<std::mutex> g(state_->m);
    state_->alarms.cancel(a);
}

void manual_clock::advance(duration d) {
    std::lock_guard<std::mutex> g(state_->m);
    const time_point target = state_->now + d;
    for (auto next = state_->alarms.next(); next && *next <= target; next = state_->alarms.next()) {
        if (*next > state_->now) state_->now = *next;
        state_->alarms.pop_due(state_->now)->ring();
    }
    state_->now = target;
}

std::optional<pool_clock::time_point> manual_clock::next_alarm() const {
    std::lock_guard<std::mutex> g(state_->m);
    return state_->alarms.next();
}

std::size_t manual_clock::alarms() const {
    std::lock_guard<std::mutex> g(state_->m);
    return state_->alarms.size();
}

}  // namespace respool
