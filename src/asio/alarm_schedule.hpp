// The alarms of one clock in time order (the default clock's thread and manual_clock share it).
// Not thread-safe: each clock guards it with its own mutex.
//
// A pool's alarm (a scheduled_alarm) carries its own place in the schedule, so setting it again and
// again never allocates and cannot fail: a pool whose memory runs out still re-arms its health
// checks, housekeeping and creation retries. Any other alarm gets a place allocated per set().
#pragma once

#include <respool/clock.hpp>

#include <boost/intrusive/set.hpp>

#include <map>
#include <optional>
#include <unordered_map>

namespace respool::detail {

// An alarm with room for its place in a schedule.
class scheduled_alarm : public pool_clock::alarm {
public:
    using time_point = pool_clock::time_point;
    boost::intrusive::set_member_hook<boost::intrusive::link_mode<boost::intrusive::safe_link>> place;
    time_point at{};

protected:
    ~scheduled_alarm() = default;
};

class alarm_schedule {
public:
    using time_point = pool_clock::time_point;

    // Returns true when `a` became the earliest alarm. Never throws for a scheduled_alarm.
    bool set(pool_clock::alarm& a, time_point at) {
        if (auto* own = dynamic_cast<scheduled_alarm*>(&a)) {
            if (own->place.is_linked()) own_.erase(own_.iterator_to(*own));
            own->at = at;
            own_.insert(*own);
            return earliest_is(a);
        }
        cancel(a);
        auto it = by_time_.emplace(at, &a);
        by_alarm_.emplace(&a, it);
        return earliest_is(a);
    }
    void cancel(pool_clock::alarm& a) noexcept {
        if (auto* own = dynamic_cast<scheduled_alarm*>(&a)) {
            if (own->place.is_linked()) own_.erase(own_.iterator_to(*own));
            return;
        }
        auto it = by_alarm_.find(&a);
        if (it == by_alarm_.end()) return;
        by_time_.erase(it->second);
        by_alarm_.erase(it);
    }
    [[nodiscard]] std::optional<time_point> next() const noexcept {
        std::optional<time_point> t;
        if (!own_.empty()) t = own_.begin()->at;
        if (!by_time_.empty() && (!t || by_time_.begin()->first < *t)) t = by_time_.begin()->first;
        return t;
    }
    // Removes and returns the earliest alarm due at `now`, or nullptr.
    pool_clock::alarm* pop_due(time_point now) noexcept {
        const bool own_first =
            !own_.empty() && (by_time_.empty() || own_.begin()->at <= by_time_.begin()->first);
        if (own_first) {
            if (own_.begin()->at > now) return nullptr;
            scheduled_alarm& a = *own_.begin();
            own_.erase(own_.begin());
            return &a;
        }
        if (by_time_.empty() || by_time_.begin()->first > now) return nullptr;
        pool_clock::alarm* a = by_time_.begin()->second;
        by_alarm_.erase(a);
        by_time_.erase(by_time_.begin());
        return a;
    }
    [[nodiscard]] std::size_t size() const noexcept { return own_.size() + by_alarm_.size(); }

private:
    struct by_at {
        bool operator()(const scheduled_alarm& x, const scheduled_alarm& y) const noexcept {
            return x.at < y.at;
        }
    };
    using own_set = boost::intrusive::multiset<
        scheduled_alarm, boost::intrusive::compare<by_at>,
        boost::intrusive::member_hook<scheduled_alarm, decltype(scheduled_alarm::place),
                                      &scheduled_alarm::place>>;

    // Whether `a` is the one pop_due would ring first.
    [[nodiscard]] bool earliest_is(const pool_clock::alarm& a) const noexcept {
        const bool own_first =
            !own_.empty() && (by_time_.empty() || own_.begin()->at <= by_time_.begin()->first);
        return own_first ? &*own_.begin() == &a : (!by_time_.empty() && by_time_.begin()->second == &a);
    }

    own_set own_;
    std::multimap<time_point, pool_clock::alarm*> by_time_;
    std::unordered_map<pool_clock::alarm*, std::multimap<time_point, pool_clock::alarm*>::iterator> by_alarm_;
};

}  // namespace respool::detail
