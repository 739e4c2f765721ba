// What the core asks its caller to do. Every core call that changes something appends effects to an
// `effects` list; the caller (the Asio driver, a test) executes them in order after the call, outside
// any lock. Build them with the named constructors: each says what it means and fills the fields the
// dispatch reads for that kind (the others hold fixed values that nothing reads).
#pragma once

#include "nodes.hpp"

#include <cstddef>
#include <respool/destroy_reason.hpp>

#include <cstdint>
#include <vector>

namespace respool::core {

using destroy_reason = respool::destroy_reason;  // one list, in the public header

struct effect {
    enum class kind : std::uint8_t {
        wake,
        create,
        destroy,
        report_success,
        report_failure,
        circuit_changed,
        retry_after,     // creations are held back for `d` after a failure: call backoff_elapsed() then
        leak_suspected,  // a lease has been held longer than acquire_ttl (once per lease): d, where
        leak_returned,   // a lease reported as leaked came back: d (held for), where
        ready,           // the pre-warm is over (once): st ok, create_failed (the first failure) or closed
        drained,         // closed and nothing left, no creation under way (once): close waiters complete
    };
    // No default member initializers: the inline buffer of `effects` stays uninitialized (fast path).
    kind what;
    destroy_reason reason;  // destroy: why; report_failure of a resource: broken, poisoned or rejected
    status st;  // wake: ok (a place is reserved) or the error; report_failure: create_failed or ok
    waiter* w;
    // Leak reports: the resource names which lease, and nothing may be read through it. A report
    // carries what it says by value (d, where): another thread may give the lease back and destroy
    // the resource before the report runs.
    resource* r;
    duration d;
    site where;  // leak reports: the acquire that holds the lease

    // Post the resumption of w, which holds a reservation: resume(w) takes the place.
    static effect wake(waiter* w) noexcept { return make(kind::wake, w, nullptr); }
    // Post the resumption of w, decided with the error st: resume(w) reports it.
    static effect fail_wake(waiter* w, status st) noexcept {
        effect e = make(kind::wake, w, nullptr);
        e.st = st;
        return e;
    }
    // Call the factory once, then report creation_succeeded or creation_failed.
    static effect create() noexcept { return make(kind::create, nullptr, nullptr); }
    // Run the destructor hook of r and free it; the core has already uncounted it.
    static effect destroy(resource* r, destroy_reason why) noexcept {
        effect e = make(kind::destroy, nullptr, r);
        e.reason = why;
        return e;
    }
    // Circuit strategy reports (emitted only when the config enables them).
    static effect report_success() noexcept { return make(kind::report_success, nullptr, nullptr); }
    // A factory call failed.
    static effect report_creation_failure() noexcept {
        effect e = make(kind::report_failure, nullptr, nullptr);
        e.st = status::create_failed;
        return e;
    }
    // A resource failed: broken or poisoned on release, rejected by before_acquire or validation.
    static effect report_resource_failure(destroy_reason why) noexcept {
        effect e = make(kind::report_failure, nullptr, nullptr);
        e.reason = why;
        return e;
    }
    static effect circuit_changed() noexcept { return make(kind::circuit_changed, nullptr, nullptr); }
    static effect retry_after(duration delay) noexcept {
        effect e = make(kind::retry_after, nullptr, nullptr);
        e.d = delay;
        return e;
    }
    // A lease held for `held` so far (suspected) or in all (returned), by the acquire at r->lease_site.
    static effect leak_suspected(resource* r, duration held) noexcept {
        return leak(kind::leak_suspected, r, held);
    }
    static effect leak_returned(resource* r, duration held) noexcept {
        return leak(kind::leak_returned, r, held);
    }
    static effect ready(status st) noexcept {
        effect e = make(kind::ready, nullptr, nullptr);
        e.st = st;
        return e;
    }
    static effect drained() noexcept { return make(kind::drained, nullptr, nullptr); }

private:
    static effect make(kind k, waiter* w, resource* r) noexcept {
        return effect{k, destroy_reason::closed, status::ok, w, r, duration::zero(), site{}};
    }
    static effect leak(kind k, resource* r, duration held) noexcept {
        effect e = make(k, nullptr, r);
        e.d = held;
        e.where = r->lease_site;
        return e;
    }
};

// Effects of one core call. Inline storage covers every fast-path call; close() and bulk failures spill.
class effects {
public:
    void push(const effect& e) {
        if (n_ < inline_size)
            inline_[n_] = e;
        else
            more_.push_back(e);
        ++n_;
    }
    [[nodiscard]] std::size_t size() const noexcept { return n_; }
    [[nodiscard]] bool empty() const noexcept { return n_ == 0; }
    [[nodiscard]] const effect& operator[](std::size_t i) const noexcept {
        return i < inline_size ? inline_[i] : more_[i - inline_size];
    }
    void clear() noexcept {
        n_ = 0;
        more_.clear();
    }

private:
    static constexpr std::size_t inline_size = 8;
    effect inline_[inline_size];
    std::vector<effect> more_;
    std::size_t n_ = 0;
};

}  // namespace respool::core
