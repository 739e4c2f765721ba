// One coroutine hook under way, and what it is doing.
#pragma once

#include "asio/pool_impl.hpp"

#include "timer_list.hpp"

#include <boost/asio/cancellation_signal.hpp>

namespace respool::detail {

// One coroutine hook under way (factory, check, reset). Whichever comes first decides its outcome:
// the coroutine's completion, or its bound / close(). The bound and close count it as a failure of
// the hook at once and emit a terminal cancellation; the coroutine still owns its resource until it
// returns, and the resource is destroyed then. The acquire waiting for a borrow check's verdict is
// the core's business (pool_core::check_done): its deadline, a cancel or close end it there.
struct hook_run {
    run_kind what{};
    resource_node* n = nullptr;  // the resource it works on; none for a creation
    asio::cancellation_signal signal;
    timer_list::handle bound;  // create_timeout / check_timeout / reset_timeout
    hook_context ctx;          // what the hook was told (its coroutine may hold the reference)
    destroy_reason why = destroy_reason::closed;  // decided: what its resource dies of
    bool decided = false;  // past its bound or interrupted by close: the failure is counted
    std::chrono::steady_clock::time_point started{};  // a creation's start, with record_timings
};

const char* to_string(run_kind k) noexcept;

}  // namespace respool::detail
