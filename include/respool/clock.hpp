// The time a pool's driver reads and the timers it runs: waiter deadlines, hook timeouts, health
// checks, lifecycle ticks, creation back-off, the circuit cool-down and close grace periods.
//
// A pool has one alarm on its clock, set to its earliest timer. When it rings, the pool posts its
// timer work to its own executor: a clock never runs pool code on its own thread, and an alarm holds
// no work on any executor (a pool's timers never keep an event loop alive). Closing a pool cancels its
// alarm; once close() returns, nothing of the pool's timers touches the executor again.
//
//   auto clock = std::make_shared<respool::manual_clock>();
//   respool::pool<conn> p(io.get_executor(), {.acquire_timeout = 5s, .clock = clock}, hooks);
//   clock->advance(5s);  // deadlines, health ticks... fall due; io.poll() runs the pool's timer work
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>

namespace respool {

class pool_clock {
public:
    using time_point = std::chrono::steady_clock::time_point;
    using duration = std::chrono::steady_clock::duration;

    // What a clock rings. Each pool owns one.
    class alarm {
    public:
        // Called once per set(), at or after its time, from the clock's thread (or the thread that
        // advances a manual clock). Must be quick, must not block and must not call the clock.
        virtual void ring() noexcept = 0;

    protected:
        ~alarm() = default;
    };

    virtual ~pool_clock() = default;
    [[nodiscard]] virtual time_point now() const noexcept = 0;
    // Rings `a` once at or after `at`, replacing the alarm's earlier setting. Thread-safe.
    virtual void set(alarm& a, time_point at) = 0;
    // After cancel returns, `a` does not ring until set again; a ring under way has finished.
    // Thread-safe; never called from ring().
    virtual void cancel(alarm& a) noexcept = 0;
};

// The default: std::chrono::steady_clock, rung by one process-wide timer thread that starts with the
// first pool. The thread does not survive fork(): create pools in the process that uses them.
std::shared_ptr<pool_clock> default_clock();

// Time that moves only when told: for tests and simulations of the pool's timing rules.
class manual_clock final : public pool_clock {
public:
    // Starts at an arbitrary fixed time (one hour after the steady clock's epoch).
    manual_clock();
    ~manual_clock() override;
    manual_clock(const manual_clock&) = delete;
    manual_clock& operator=(const manual_clock&) = delete;

    [[nodiscard]] time_point now() const noexcept override;
    void set(alarm& a, time_point at) override;
    void cancel(alarm& a) noexcept override;

    // Moves time forward by `d`, ringing every alarm due on the way in time order. A pool's ring only
    // posts its timer work, which reads the clock when it runs: to let each step happen at its own
    // time, advance to next_alarm() and run the executor in between.
    void advance(duration d);
    // The earliest alarm that is set, if any.
    [[nodiscard]] std::optional<time_point> next_alarm() const;
    // How many alarms are set.
    [[nodiscard]] std::size_t alarms() const;

private:
    struct state;
    std::unique_ptr<state> state_;
};

}  // namespace respool
