// The invariants (docs/01-concepts.md) that are visible from inside the core, for the tests.
#include "pool_core.hpp"

#include <sstream>

namespace respool::core {

std::string pool_core::audit() const {
    std::ostringstream e;
    if (total() > cfg_.max && !shrinking_) e << "total " << total() << " > max " << cfg_.max << "; ";
    if (reserved_ > idle_.size()) e << "reserved " << reserved_ << " > idle " << idle_.size() << "; ";
    if (creating_ > active_) e << "creating " << creating_ << " > active " << active_ << "; ";
    if (creating_ > cfg_.max_concurrent_creations) e << "creating above max_concurrent_creations; ";
    if (parked_ > 0 && idle_.size() > reserved_) e << "lost wake-up: free idle while a waiter is parked; ";
    if (parked_ > 0 && !closed_ && circuit_ != circuit::open && !backoff_active_ && creating_ < parked_ &&
        creating_ < cfg_.max_concurrent_creations && total() < cfg_.max)
        e << "parked waiters with free capacity and no creation under way; ";
    if (closed_ && (parked_ || reserved_ || !idle_.empty())) e << "closed pool still holds waiters or idle; ";
    std::uint32_t n = 0;
    std::uint64_t last = 0;
    for (waiter* w = fifo_.head; w; w = w->next, ++n) {
        if (w->state != waiter_state::parked) e << "non-parked waiter in queue; ";
        if (w->seq <= last) e << "queue out of arrival order; ";
        last = w->seq;
    }
    if (n != parked_) e << "queue length " << n << " != parked " << parked_ << "; ";
    n = 0;
    for (waiter* w = reserved_list_.head; w; w = w->next, ++n)
        if (w->state != waiter_state::reserved) e << "non-reserved waiter in reserved list; ";
    if (n != reserved_) e << "reserved list length " << n << " != reserved " << reserved_ << "; ";
    n = 0;
    for (waiter* w = checking_list_.head; w; w = w->next, ++n) {
        if (w->state != waiter_state::checking) e << "waiter in the checking list is not checking; ";
        if (!w->checking || w->checking->checker != w) e << "checking waiter and its resource disagree; ";
        if (w->checking && w->checking->checks_due == 0) e << "checking waiter's resource has no check due; ";
    }
    if (n != checking_) e << "checking list length " << n << " != checking " << checking_ << "; ";
    if (checking_ > active_) e << "more waiters checking than resources lent; ";
    if (closed_ && checking_) e << "closed pool still has a waiter waiting for a verdict; ";
    if (drained_ && total() != 0) e << "drained but resources remain; ";
    // Exactly the pending waiters with a deadline are in the deadline index, each where it says.
    e << deadlines_.check();
    std::size_t timed = 0;
    for (const waiter_list* l : {&fifo_, &reserved_list_, &checking_list_}) {
        for (waiter* w = l->head; w; w = w->next) {
            if (!w->has_deadline) continue;
            ++timed;
            if (!deadlines_.holds(*w))
                e << "pending waiter with a deadline missing from the deadline index; ";
        }
    }
    if (timed != deadlines_.size())
        e << "deadline index holds " << deadlines_.size() << " waiters, " << timed
          << " pending have a deadline; ";
    return e.str();
}

}  // namespace respool::core
