// respool's error codes and their category. Every asynchronous operation reports through these.
#pragma once

#include <boost/system/error_code.hpp>

#include <exception>
#include <string>
#include <type_traits>

namespace respool {

using error_code = boost::system::error_code;

enum class errc {
    closed = 1,     // the pool is closed (or closed while the acquire waited)
    timeout,        // the acquire deadline passed before a place was free
    cancelled,      // the caller cancelled the acquire (Asio per-operation cancellation)
    unavailable,    // the circuit breaker is open
    exhausted,      // try_acquire: nothing free now; or the waiter queue is full (max_waiters)
    create_failed,  // the factory failed without an error_code of its own
    broken,         // before_release said the resource is broken (reported to the circuit strategy)
    poisoned,       // the holder poisoned the lease (reported to the circuit strategy)
    not_supported,  // try_acquire on a pool whose before_acquire hook is a coroutine
    hook_timeout,   // a coroutine factory ran past create_timeout (or was interrupted by close)
};

const boost::system::error_category& category() noexcept;

// What an error_code cannot carry: the factory's own message and the error object it threw, for the
// acquire it failed (async_acquire(diagnostics&, ...)). Hooks must keep credentials out of messages.
struct diagnostics {
    std::string message;       // e.g. the exception's what(): "FATAL: password authentication failed ..."
    std::exception_ptr error;  // rethrow to inspect a driver's own error type
    void clear() noexcept {
        message.clear();
        error = nullptr;
    }
};

inline error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), category()};
}

}  // namespace respool

template <>
struct boost::system::is_error_code_enum<respool::errc> : std::true_type {};
