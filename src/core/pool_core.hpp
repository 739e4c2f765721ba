// The sans-io pool: every rule of acquire, waiting, release, health checks, the idle store, the circuit
// and close (docs/01-concepts.md) as a plain state machine. No Asio, no threads, no
// clock reads (time comes in as arguments), no allocation on the take/release path. Callers (the Asio
// driver, the unit and model tests) feed it events and execute the effects it emits:
//   wake     - post the resumption of waiter w; it then calls resume(w) to learn its outcome
//   create   - call the factory once; report creation_succeeded / creation_failed
//   destroy  - run the destructor hook of r and free it (the core has already uncounted it)
//   report_* - tell the circuit strategy (only when reports are enabled)
//   ready    - the pre-warm is over (once); drained - closed and empty (once)
// A resource taken for a borrower may first need checks (take_result::check): the caller runs that
// hook and reports its verdict with check_done(); meanwhile the borrower's deadline, a cancel and
// close() can still end its wait, and the verdict then decides only the resource's fate.
#pragma once

#include "nodes.hpp"

#include <respool/stats.hpp>

#include "deadline.hpp"
#include "deadline_index.hpp"
#include "effects.hpp"
#include "intrusive_list.hpp"
#include "ring.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace respool::core {

using circuit = respool::circuit_state;  // one list, in the public stats header

struct config {
    std::uint32_t min = 0;
    std::uint32_t max = 10;
    std::uint32_t max_waiters = 0;  // 0 = unbounded
    std::uint32_t max_concurrent_creations = 2;
    bool lifo = false;
    bool before_acquire = false;  // a before_acquire hook exists: resources lent before pass it
    bool reports = false;         // emit report_success / report_failure effects
    // Lifecycle, all measured on the core's clock and applied by housekeep(now):
    duration idle_ttl{};              // 0 = off: idle longer is evicted, never below min
    duration acquire_ttl{};           // 0 = off: a lease held longer is reported once (leak_suspected)
    bool validate_on_borrow = false;  // take_result::validate for resources idle >= validate_after
    duration validate_after{};
    // Creation retry after a failure: initial * 2^(n-1), capped (the driver adds jitter). 0 = no delay.
    duration retry_initial{};
    duration retry_max{};
    bool lifetimes = false;  // resources carry expires_at (max_lifetime): check it on release
    // Derived in the constructor: which per-resource stamps the enabled features need. With none of
    // them, taking and returning a resource never touches the resource's memory.
    bool track_leases = false;  // acquire_ttl > 0
    bool stamp_idle = false;    // idle_ttl > 0 or validate_on_borrow
};

using counters = respool::pool_counters;  // defined once, in the public stats header

struct snapshot {
    std::uint32_t idle = 0, active = 0, total = 0, waiting = 0, max = 0;
    std::uint32_t reserved = 0, creating = 0;
    circuit circuit_state = circuit::closed;
    bool closed = false;
    counters c;
};

class pool_core {
public:
    explicit pool_core(const config& cfg);
    pool_core(const pool_core&) = delete;
    pool_core& operator=(const pool_core&) = delete;

    struct take_result {
        // 16 bytes, returned in two registers: the resource first, the two small fields after it.
        resource* r = nullptr;  // with st ok: taken; nullptr: nothing free (park, or create inline)
        status st = status::ok;
        borrow_check check = borrow_check::none;  // the check r must pass before it is lent
    };
    // The outcome of a check's verdict: the waiter it concerns (nullptr: a synchronous caller, or
    // the waiter left), and what that waiter gets now: the resource (with its next check, or none:
    // lend it, the acquire is counted), parked again (ok, no resource), or an error.
    struct verdict {
        waiter* w = nullptr;
        take_result t;
    };

    // Once, right after construction: pre-warm to min. The ready effect follows when the pre-warm is
    // over (at once when min is 0).
    void start(effects& fx);

    // An acquire's first steps for a newcomer (an idle resource, else a creation in a free place, else
    // park). Never takes a reserved place. A resource that needs a
    // check comes back with it: the caller runs it and calls check_done (a synchronous caller), or
    // first wait_for_check (an acquire that may be cancelled or time out meanwhile). Every resource
    // taken from idle is due for before_acquire: a newcomer finds none made for it.
    // `where`: the acquire's call site, which leak reports name (with acquire_ttl).
    take_result try_take(const site& where = {}) noexcept { return try_take(newcomer, true, where); }
    // The same for a synchronous caller that may take more than once (a check refused what it got):
    // `arrival` comes from arrive(), once, before its first take; a resource made since then (the
    // replacement of one it refused) was made for it and skips before_acquire, so a hook that always
    // says no costs one creation per refused resource, not a loop.
    take_result try_take(std::uint64_t arrival, const site& where = {}) noexcept {
        return try_take(arrival, true, where);
    }
    [[nodiscard]] std::uint64_t arrive() noexcept { return next_seq_++; }
    // Whether the resource try_take would lend now must be validated first (it idled past
    // validate_after at now()): a caller that cannot wait for a coroutine validation takes nothing
    // then, and waits its turn as an acquire that can.
    [[nodiscard]] bool next_take_validates() const noexcept {
        if (!cfg_.validate_on_borrow || idle_.size() <= reserved_) return false;
        const resource* r = cfg_.lifo ? idle_.back() : idle_.front();
        return now_ - r->idle_since > cfg_.validate_after;
    }
    static constexpr std::uint64_t newcomer = ~std::uint64_t{0};  // arrived after every resource
    // The newcomer w waits for the verdict on r (take_result::check) like a parked waiter: expire(),
    // cancel() and close() end its wait; check_done() gives the verdict. `now`, `deadline` and
    // `timeout` as for park().
    void wait_for_check(waiter& w, resource* r, time_point now, std::optional<time_point> deadline,
                        std::optional<duration> timeout);
    // The verdict of the check r is under. Passed: the next check, or the resource is lent (a closed
    // pool destroys it instead: closed). Failed: r is destroyed (rejected) and its borrower takes
    // again in its arrival position: another resource (perhaps with checks), parked, or an
    // error; a synchronous caller gets {ok, nullptr} and takes again itself. When the borrower left, a
    // pass gives r back to idle.
    verdict check_done(resource* r, bool passed, time_point now, effects& fx);

    // Park after try_take found nothing. Returns ok when parked, otherwise the error that ends the
    // acquire at once (exhausted: queue full; timeout: the deadline is not after now). May emit create
    // effects. The deadline is absolute; none waits until served, cancelled or failed. expire() times
    // the waiter out once now reaches its deadline; time_point::max() never comes in practice.
    status park(waiter& w, time_point now, std::optional<time_point> deadline, effects& fx) {
        return park(w, now, deadline, std::nullopt, fx);
    }
    // The same, told the relative timeout the deadline came from (deadline_after(now, timeout)), when
    // there is one: waiters that share a timeout share a deadline lane, O(1) per park and per wake. A
    // timeout that did not produce the deadline is ignored (the deadline alone keys the lane).
    status park(waiter& w, time_point now, std::optional<time_point> deadline,
                std::optional<duration> timeout, effects& fx);
    // The same with a timeout relative to now: deadline_after(now, timeout), which saturates (a zero or
    // negative timeout fails at once when nothing is free).
    status park(waiter& w, time_point now, std::optional<duration> timeout, effects& fx);
    // No deadline (std::nullopt alone would be ambiguous between the two above).
    status park(waiter& w, time_point now, std::nullopt_t, effects& fx) {
        return park(w, now, std::optional<time_point>{}, fx);
    }

    // The resumption of a woken waiter: its error, or the idle resource reserved for it (with a check
    // due, w waits for its verdict as in wait_for_check). A half-open circuit whose probes are used up
    // fails it with unavailable (its reservation moves on).
    take_result resume(waiter& w, effects& fx);

    // Cancellation of a pending waiter (parked, reserved, or waiting for a check's verdict). false when
    // it was already decided (the cancel lost the race).
    bool cancel(waiter& w, effects& fx);

    // Times out every pending waiter (parked, reserved or checking) whose deadline is <= now, earliest first;
    // O(1) per waiter timed out when they share a timeout, O(log n) for any mix.
    void expire(time_point now, effects& fx);
    // The earliest deadline of a pending waiter, O(1): the driver keeps one timer armed at it.
    [[nodiscard]] std::optional<time_point> next_deadline() const noexcept { return deadlines_.earliest(); }

    enum class release_kind : std::uint8_t { ok, broken, poisoned };
    void release(resource* r, release_kind kind, effects& fx);
    // The common release, inline: nobody waits, no reports, no per-resource stamps, not closed. false
    // when any of that holds (then call release()).
    bool release_fast(resource* r) {
        if (plain_release_blocked_ || fifo_.head) return false;
        --active_;
        idle_.push_back(r);
        return true;
    }
    // The driver's thread-affinity cache (pool_options::thread_affinity) may lend and take back
    // resources the core counts as active, without telling it: true while nobody waits or holds a
    // reservation, the circuit is closed, the pool is open, no before_acquire or validation runs, and
    // no release needs a report to the circuit strategy or a lease to be tracked.
    [[nodiscard]] bool uncontended() const noexcept {
        return !plain_take_blocked_ && !plain_release_blocked_ && !cfg_.reports && !cfg_.track_leases &&
               fifo_.head == nullptr && reserved_ == 0;
    }
    // The common take, inline: an unreserved idle resource, circuit closed, no checks or stamps.
    // nullptr when anything else applies (then call try_take()).
    resource* take_fast() noexcept {
        if (plain_take_blocked_ || idle_.size() <= reserved_) return nullptr;
        ++active_;
        ++c_.acquires;
        ++c_.immediate_takes;
        return cfg_.lifo ? idle_.pop_back() : idle_.pop_front();
    }

    // Creation on behalf of the queue (create effects).
    void creation_succeeded(resource* r, effects& fx);
    waiter* creation_failed(effects& fx);  // returns the waiter that received the failure, if any

    // try_acquire with a synchronous factory: a place free for anyone (no parked waiter) becomes a
    // creation owned by the caller. The caller reports inline_created / inline_failed.
    bool begin_inline_creation() noexcept;
    status inline_created(resource* r, effects& fx,
                          const site& where = {});  // ok: r is the caller's; closed: destroyed
    void inline_failed(effects& fx);

    // Background health check, one round at a time and one resource at a time: begin_health_round
    // starts a round; begin_check hands out the oldest idle resource not yet checked in this round
    // (counted active meanwhile; nullptr: the round is over), end_check takes the verdict.
    void begin_health_round() noexcept { ++health_round_; }
    resource* begin_check() noexcept;
    void end_check(resource* r, bool healthy, effects& fx);

    // Create up to min again (after a failure blocked the floor, e.g. from a timer tick).
    void replenish(effects& fx);

    // The core's clock moves only when told. Stamps (idle_since, leased_at) use the last value.
    void set_now(time_point now) noexcept {
        if (now > now_) now_ = now;
    }
    [[nodiscard]] time_point now() const noexcept { return now_; }
    // Periodic lifecycle work at `now`: evict idle resources past idle_ttl (never below min, never a
    // reserved place), retire idle ones past their expires_at, report leases held past acquire_ttl,
    // re-warm to min.
    void housekeep(time_point now, effects& fx);
    // The delay of a retry_after effect has passed: creations may start again.
    void backoff_elapsed(effects& fx);
    // The source is known to be back: the failures in a row are forgotten (the next back-off starts
    // from retry_initial), a back-off under way ends, and creations the queue or the floor want start.
    void retry_now(effects& fx);

    [[nodiscard]] circuit circuit_state() const noexcept { return circuit_; }
    // half_open with probes > 0 admits at most that many acquires until the state changes again.
    void set_circuit(circuit s, effects& fx, std::uint32_t probes = 0);
    void set_reports(bool on) noexcept {
        cfg_.reports = on;
        refresh_fast_paths();
    }

    // Runtime controls. set_max: a new cap (>= 1 and >= min): a higher one serves parked waiters at once;
    // a lower one destroys idle resources beyond it now and the rest as they come back (never one a
    // holder has). retire_all: every resource that exists now is destroyed when next idle or returned
    // (idle ones at once); new ones replace them, up to min and for the queue (soft eviction after a
    // failover).
    void set_max(std::uint32_t max, effects& fx);
    void retire_all(effects& fx);

    // Idempotent; returns false when already closed. Fails every pending waiter (closed) and destroys
    // the idle resources; the rest go as they come back, and the drained effect follows the last.
    bool close(effects& fx);
    [[nodiscard]] bool closed() const noexcept { return closed_; }
    // try_take would lend an idle resource now, and count nothing but the acquire: open, circuit
    // closed, an idle resource that no waiter has reserved.
    [[nodiscard]] bool lends_now() const noexcept {
        return !closed_ && circuit_ == circuit::closed && idle_.size() > reserved_;
    }
    // Closed, every resource gone and no creation under way (the drained effect was emitted).
    [[nodiscard]] bool drained() const noexcept { return drained_; }
    // The pre-warm is over (the ready effect was emitted).
    [[nodiscard]] bool ready() const noexcept { return !warming_; }

    [[nodiscard]] std::uint32_t idle() const noexcept { return static_cast<std::uint32_t>(idle_.size()); }
    [[nodiscard]] std::uint32_t active() const noexcept { return active_; }
    [[nodiscard]] std::uint32_t total() const noexcept { return idle() + active_; }
    [[nodiscard]] std::uint32_t parked() const noexcept { return parked_; }
    [[nodiscard]] std::uint32_t reserved() const noexcept { return reserved_; }
    [[nodiscard]] std::uint32_t creating() const noexcept { return creating_; }
    [[nodiscard]] std::uint32_t waiting() const noexcept { return parked_ + reserved_; }
    [[nodiscard]] std::uint32_t checking() const noexcept { return checking_; }
    [[nodiscard]] const config& cfg() const noexcept { return cfg_; }
    [[nodiscard]] const counters& stats() const noexcept { return c_; }
    [[nodiscard]] snapshot snap() const noexcept;
    // Idle resource i in idle order (0 = next to be taken in FIFO mode). For tests and tools.
    [[nodiscard]] resource* idle_at(std::size_t i) const noexcept { return idle_.at(i); }

    // The driver ended an acquire the core never saw (its deadline had passed, and no synchronous
    // creation could serve it at once): count it.
    void count_timeout() noexcept { ++c_.timeouts; }

    // Checks the invariants (docs/01-concepts.md) that are visible from inside; returns "" or a description.
    [[nodiscard]] std::string audit() const;

private:
    resource* pop_idle() noexcept;
    void reserve_for_parked(effects& fx);
    void maybe_create(effects& fx);
    void fail(waiter& w, status st, effects& fx);
    void fail_all(status st, effects& fx);
    void destroy(resource* r, destroy_reason why, effects& fx);
    void report_creation_failure(effects& fx);
    void report_resource_failure(destroy_reason why, effects& fx);
    // idle -> active: leased list, probes, checks (`arrival`: the taker's, see try_take; `at_once`:
    // the taker never parked, so its acquire is also an immediate take).
    take_result lend(resource* r, std::uint64_t arrival, const site& where, bool at_once,
                     bool checks = true) noexcept;
    take_result try_take(std::uint64_t arrival, bool at_once, const site& where) noexcept;
    void unlend(resource* r) noexcept;
    void hold_for_check(waiter& w, resource* r) noexcept;
    void drop_checker(waiter& w) noexcept;
    take_result retry(waiter& w, time_point now, effects& fx);
    status confirm_take(resource* r, effects& fx);
    void reject(resource* r, effects& fx);
    void give_back(resource* r, effects& fx);
    void note_creation_over(effects& fx);
    void note_gone(effects& fx);
    static borrow_check next_check(std::uint8_t due) noexcept {  // the lowest bit runs first
        return static_cast<borrow_check>(due & -due);
    }
    void refresh_fast_paths() noexcept {
        plain_release_blocked_ = closed_ || cfg_.reports || cfg_.lifetimes || cfg_.stamp_idle ||
                                 cfg_.track_leases || stale_ != 0 || shrinking_;
        plain_take_blocked_ = closed_ || circuit_ != circuit::closed || cfg_.before_acquire ||
                              cfg_.validate_on_borrow || cfg_.track_leases;
    }
    bool probes_exhausted() const noexcept {
        return circuit_ == circuit::half_open && probe_limit_ != 0 && probes_admitted_ >= probe_limit_;
    }
    bool drop_unwanted(resource* r, effects& fx);
    void shed_unwanted(effects& fx);
    void creation_failure(effects& fx);

    config cfg_;
    bool plain_release_blocked_ =
        false;  // refresh_fast_paths(); read by every take and release, rarely written
    bool plain_take_blocked_ = false;
    // What every take and release writes, on one cache line: the idle ring's header (24 bytes), the
    // queue's ends, active_, reserved_, and the first two counters. In thread_safe mode the lines a
    // critical section writes travel between cores with the lock: one line instead of three.
    alignas(64) ring<resource*> idle_;
    waiter_list fifo_;  // parked waiters, arrival order
    std::uint32_t active_ = 0;
    std::uint32_t reserved_ = 0;
    counters c_;                 // acquires and immediate_takes first: still on the hot line
    waiter_list reserved_list_;  // woken with a reservation, not yet resumed
    waiter_list checking_list_;  // holding a resource under its borrow checks
    std::uint32_t checking_ = 0;
    deadline_index deadlines_;  // pending waiters (parked or reserved) that have a deadline
    std::uint32_t parked_ = 0;
    std::uint32_t creating_ = 0;
    std::uint64_t next_seq_ = 1;
    circuit circuit_ = circuit::closed;
    bool closed_ = false;
    bool floor_blocked_ = false;   // a floor creation failed with nobody waiting (no back-off configured)
    bool backoff_active_ = false;  // a retry_after is pending: no creation starts
    std::uint32_t failures_in_row_ = 0;
    std::uint32_t probe_limit_ = 0;
    std::uint32_t probes_admitted_ = 0;
    time_point now_{};
    std::uint32_t generation_ = 0;  // retire_all() count: resources of an older one are replaced
    std::uint32_t stale_ = 0;       // resources of an older generation still alive
    bool shrinking_ = false;        // total > max after set_max() lowered it
    bool warming_ = true;           // the pre-warm is not over (ready effect not yet emitted)
    bool drained_ = false;          // the drained effect was emitted
    std::uint64_t health_round_ = 0;
    resource* leased_head_ = nullptr;
};

}  // namespace respool::core
