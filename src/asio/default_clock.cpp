// The default pool clock: the steady clock, and one process-wide thread that rings alarms. Rings run
// under the clock's mutex, so cancel() returning means no ring of that alarm is under way: a pool that
// cancels its alarm at close (or destruction) is never rung again, whatever the thread is doing.
#include <respool/clock.hpp>

#include "alarm_schedule.hpp"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace respool {

namespace {

class steady_alarm_clock final : public pool_clock {
public:
    steady_alarm_clock() : thread_([this] { run(); }) { thread_.detach(); }

    time_point now() const noexcept override { return std::chrono::steady_clock::now(); }

    void set(alarm& a, time_point at) override {
        std::lock_guard<std::mutex> g(m_);
        if (alarms_.set(a, at)) wake_.notify_one();  // a new earliest alarm: the thread sleeps too long
    }

    void cancel(alarm& a) noexcept override {
        std::lock_guard<std::mutex> g(m_);
        alarms_.cancel(a);
    }

private:
    [[noreturn]] void run() {
        std::unique_lock<std::mutex> g(m_);
        for (;;) {
            const auto next = alarms_.next();
            if (!next) {
                wake_.wait(g);
                continue;
            }
            if (*next > now()) {
                wake_.wait_until(g, *next);
                continue;
            }
            while (alarm* a = alarms_.pop_due(now())) a->ring();
        }
    }

    std::mutex m_;
    std::condition_variable wake_;
    detail::alarm_schedule alarms_;
    std::thread thread_;
};

}  // namespace

std::shared_ptr<pool_clock> default_clock() {
    // Never destroyed: pools in static storage may still cancel their alarms during static destruction.
    static auto* clock = new std::shared_ptr<pool_clock>(std::make_shared<steady_alarm_clock>());
    return *clock;
}

}  // namespace respool
