// respool::basic_pool: the low-level pool under the C ABI (respool.h), for bindings that keep their
// resources in a representation of their own. It is the same pool as pool<T> (same driver, same
// waiting rules, options, stats and circuit breaker) without the typed front: the caller's hooks
// make and free the nodes resources live in, every hook is synchronous, and an acquire hands over
// a bare node (released by the caller) instead of a lease. Nothing depends on the resource type,
// and nothing is type-erased beyond the hooks' vtable.
//
//   struct conn_node final : respool::basic_node { conn* c; };
//   class conn_hooks final : public respool::basic_hooks { ... };  // create: return new conn_node{...};
//   respool::basic_pool p(io.get_executor(), {.max = 8}, std::make_unique<conn_hooks>());
//   respool::error_code ec;
//   if (respool::basic_node* n = p.try_acquire(ec)) {
//       use(static_cast<conn_node*>(n)->c);
//       p.release(n, false);
//   }
//
// In C++, prefer pool<T>: leases return themselves, checks may be coroutines, acquires take any
// Asio completion token and can be cancelled. See docs/04-c-api.md.
#pragma once

#include <respool/circuit_breaker.hpp>
#include <respool/detail/pool_handle.hpp>
#include <respool/error.hpp>
#include <respool/lease.hpp>
#include <respool/options.hpp>
#include <respool/pool.hpp>  // the acquire operation pool<T> uses (detail::initiate_acquire)
#include <respool/stats.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

namespace respool {

// A resource as a basic pool holds it. The base's fields belong to the pool (opaque to the caller,
// left as the default constructor leaves them); derive from it to carry the resource.
using basic_node = detail::resource_node;

// The checks a basic pool runs, at the points where pool<T> runs the hooks of the same names
// (hooks.hpp): validate and before_acquire on borrow, healthcheck in the background on idle
// resources, before_release on release.
enum class basic_check : std::uint8_t { validate, before_acquire, healthcheck, before_release };

// The caller's side of a basic pool. Every call is synchronous and runs on the thread that needs it
// (an acquiring or releasing caller, or the pool's executor for background work); none may throw.
class basic_hooks {
public:
    virtual ~basic_hooks() = default;
    // Whether the pool runs this check at all. Asked once, when the pool is made.
    [[nodiscard]] virtual bool has(basic_check c) const noexcept = 0;
    // A new resource in a node the hooks allocated (the pool hands it to destroy() exactly once), or
    // nullptr with `ec` set: that error reaches the acquire the creation was for.
    virtual basic_node* create(error_code& ec) noexcept = 0;
    // true keeps the resource; false destroys it (and a borrow takes another).
    virtual bool check(basic_check c, basic_node& n) noexcept = 0;
    // Destroys the resource and frees its node. false when destroying the resource failed (counted
    // and logged as a failed destructor hook).
    virtual bool destroy(basic_node* n) noexcept = 0;
};

namespace detail {
struct untyped {};  // the value type of the leases basic_pool unwraps into nodes: never read
inline namespace RESPOOL_ASIO_BUILD {  // the Asio build check of pool_handle.hpp covers this one too
std::shared_ptr<pool_impl> make_basic_pool_impl(boost::asio::any_io_executor ex, const pool_options& opts,
                                                std::unique_ptr<basic_hooks> hooks);
}
}  // namespace detail

// Thread-safety: every member from the pool's executor, or from any thread with
// pool_options::thread_safe (the C ABI's pools are).
class basic_pool {
public:
    // Validates `opts` (std::invalid_argument naming the option; also for null hooks), then
    // pre-warms `min` resources through hooks->create before it returns (stats().idle says how many
    // came in: a failed creation is not an exception).
    basic_pool(boost::asio::any_io_executor ex, const pool_options& opts, std::unique_ptr<basic_hooks> hooks)
        : impl_(detail::make_basic_pool_impl(std::move(ex), opts, std::move(hooks))),
          facts_(&detail::facts_of(*impl_)) {}
    // Closes the pool (idle resources are destroyed). Release every lent node first: release() is how
    // a node comes back, so one still out when the pool object dies is never destroyed.
    ~basic_pool() { detail::handle_dropped(*impl_); }
    basic_pool(const basic_pool&) = delete;
    basic_pool& operator=(const basic_pool&) = delete;

    // Never waits: a node, or nullptr with `ec` (closed, unavailable, exhausted, or the error of a
    // creation it made inline when nothing was idle and a place was free). As pool<T>::try_acquire.
    basic_node* try_acquire(error_code& ec) noexcept {
        ec = {};
        return detail::try_acquire(*impl_, ec, {});
    }
    // The first step of an acquire that may wait: a node, or nullptr with `ec` (closed, unavailable,
    // exhausted), or nullptr and no error when nothing is free for this caller now. Creates nothing:
    // resources for waiters are created for the queue, by async_acquire.
    basic_node* acquire_now(error_code& ec) noexcept {
        ec = {};
        return detail::acquire_now(*impl_, ec, {});
    }
    // Acquires, waiting in the FIFO queue if need be. `done(error_code, basic_node*)` (a node and no
    // error, or no node and the error) runs exactly once, on the pool's executor, never inside this
    // call. `timeout`: a deadline from now; none waits until served, closed or refused
    // (pool_options::acquire_timeout is not applied here: pass it). Errors as pool<T>::async_acquire's,
    // without cancellation. Throws std::bad_alloc when the wait cannot be set up (`done` never runs).
    // The same operation as pool<T>'s: a parked acquire allocates its state once, with Asio's
    // recycling allocator.
    template <class Handler>
    void async_acquire(std::optional<duration> timeout, Handler&& done) {
        detail::initiate_acquire<detail::untyped>{impl_.get(), facts_}(
            [h = std::forward<Handler>(done)](error_code ec, lease<detail::untyped> l) mutable {
                std::move(h)(ec, l ? detail::lease_access::detach(l) : nullptr);
            },
            timeout);
    }
    // Returns a lent node (before_release runs), or destroys it when `broken`.
    void release(basic_node* n, bool broken) noexcept { detail::release_node(impl_.get(), n, broken); }

    // Idempotent: waiters fail with closed, idle resources are destroyed, lent ones die on release.
    void close() noexcept { detail::close(*impl_); }
    [[nodiscard]] pool_stats stats() const noexcept { return detail::stats(*impl_); }
    circuit_breaker& breaker() noexcept { return detail::breaker(*impl_); }
    void set_circuit_strategy(std::shared_ptr<circuit_strategy> s) {
        detail::set_strategy(*impl_, std::move(s));
    }

private:
    std::shared_ptr<detail::pool_impl> impl_;
    const detail::pool_facts* facts_;  // lives in *impl_
};

}  // namespace respool
