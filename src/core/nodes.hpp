// Intrusive nodes shared by the sans-io core (src/core) and the inline templates of the Asio layer.
// They are plain data: the core links them, the layer that owns the memory (an operation state, a
// resource node) embeds them, so parking a waiter or storing an idle resource never allocates.
#pragma once

#include <respool/source_location.hpp>

#include <chrono>
#include <cstdint>

namespace respool::core {

using clock = std::chrono::steady_clock;
using time_point = clock::time_point;
using duration = clock::duration;
// An acquire's call site, as its caller gave it: leak reports name the acquire that holds a lease.
using site = respool::source_location;

// Outcome of a core decision. `ok` with a resource means "taken"; the others end an acquire.
enum class status : std::uint8_t {
    ok = 0,
    closed,
    timeout,
    cancelled,
    unavailable,
    exhausted,
    create_failed,
};

struct waiter;

// The checks a resource passes on its way out of the pool, as bits of resource::checks_due, run in
// this order: validation when it idled past validate_after, then before_acquire unless it was made for
// this very acquire. `none`: lend it as it is.
enum class borrow_check : std::uint8_t { none = 0, validate = 1, before_acquire = 2 };

// Header of every resource the pool owns. The layer above embeds it first in its typed node.
// Times are the core's clock (the last `now` it was given): coarse, and free on the fast path.
struct resource {
    resource* lprev = nullptr;  // leased list: lent out (or in before_acquire), for leak detection
    resource* lnext = nullptr;
    std::uint64_t checked_round = 0;  // the health-check round that last looked at it
    time_point created_at{};
    time_point idle_since{};  // last return to idle
    time_point leased_at{};   // when it was lent
    site lease_site{};        // the acquire it was lent to (leak detection only)
    time_point expires_at{};  // max_lifetime deadline with jitter (set by the driver); {} = never
    bool leased = false;
    bool leak_reported = false;
    std::uint32_t generation = 0;  // retire_all() generation it was made in
    // Taken for a borrower and under its checks: the checks still due (borrow_check bits, the lowest
    // runs now), and who waits for the verdict: `checker` (a waiter), or a synchronous caller
    // (try_acquire: no checker, not orphaned), or nobody any more (orphaned: the waiter timed out, was
    // cancelled or closed; a pass gives the resource back to idle).
    waiter* checker = nullptr;
    std::uint8_t checks_due = 0;
    bool orphaned = false;
    // Taken by a borrower that never parked: its acquire counts as an immediate take too, when the
    // last check passes (so immediate_takes never exceeds acquires, whatever the checks refuse).
    bool taken_at_once = false;
    // Never lent yet: the arrival number (waiter::seq's sequence) its creation took; 0 once lent. An
    // acquire that arrived before it was made is the one it was made for: before_acquire skips it
    // then, and only then (a pre-warmed resource, or one returned by a holder, is always checked).
    std::uint64_t made = 0;
};

enum class waiter_state : std::uint8_t {
    none,      // not known to the core (fresh, or completed)
    parked,    // in the FIFO queue, no place yet
    reserved,  // woken with a place set aside; its resumption has not run yet
    failed,    // decided with an error; its resumption has not run yet (or is being posted)
    checking,  // holds a resource under its borrow checks (`checking`); its deadline still runs
};

// A pending acquire. Lives inside the operation state of the caller (the public acquire_op_base and
// request_node reserve exactly its size, so a new field grows every operation).
struct waiter {
    waiter* prev = nullptr;  // list links: the FIFO queue (parked), the reserved or the checking list
    waiter* next = nullptr;
    waiter* dprev = nullptr;  // deadline lane links (pending, with a deadline): see deadline_index.hpp
    waiter* dnext = nullptr;
    time_point deadline{};  // absolute; time_point::max() means "a very long time", never an overflow
    // The relative timeout the deadline came from (deadline == deadline_after(park time, span)), which
    // finds the lane of the waiters that share it; zero when the deadline was given absolute (a parked
    // waiter's span is never zero or negative: such a timeout fails at once). Kept for a re-park.
    duration span{};
    resource* checking = nullptr;  // the resource under its borrow checks (state checking)
    std::uint64_t seq = 0;         // arrival order, kept across a re-park after a rejected resource
    site where{};                  // the acquire's call site: what it is lent to (leak detection)
    std::uint32_t lane = no_lane;  // the deadline lane it is in (pending, with a deadline)
    waiter_state state = waiter_state::none;
    status result = status::ok;
    bool has_deadline = false;
    bool counted_wait = false;  // `waits` counts each acquire once, however often it parks

    static constexpr std::uint32_t no_lane = 0xffffffffu;
};

}  // namespace respool::core
