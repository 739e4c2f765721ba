// The pools on one execution context (an io_context, a thread_pool), reached by the context's
// shutdown. Asio shuts a context's services down first thing in its destructor, while its scheduler
// still accepts posts; this service's shutdown closes every pool still on the context and stops its
// alarm for good, so no timer of the pool posts into the context once it is gone, and the pool object
// may outlive it (be read, closed, destroyed; its leases returned).
#pragma once

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <mutex>
#include <unordered_map>

namespace respool::detail {

class pool_impl;

// Shared by the context's service and every pool on it: a pool destroyed after its context (and the
// service) still finds it to leave.
class context_pools {
public:
    // A pool starts on the context; false when the context has already shut down.
    bool join(pool_impl& p) noexcept;
    // The pool's driver state is being destroyed: the shutdown must not reach it any more.
    void leave(pool_impl& p) noexcept;
    // The context shuts down: every pool on it stops its alarm (under the lock, so a pool being
    // destroyed meanwhile is still whole), then, outside the lock, each pool still alive is closed.
    void shutdown() noexcept;

private:
    std::mutex m_;
    bool shut_ = false;
    std::unordered_map<pool_impl*, std::weak_ptr<pool_impl>> pools_;
};

// The registry of the execution context `ex` runs on (created with the context's service).
std::shared_ptr<context_pools> pools_of(const boost::asio::any_io_executor& ex);

}  // namespace respool::detail
