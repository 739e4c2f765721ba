// A C++ face for a pool created through the C ABI (respool.h): async_acquire with any Asio
// completion token and an RAII lease, over respool_acquire_async. The reference design's "pool object
// for a pool created from C".
//
//   respool_pool* raw = ...;                                  // respool_create(...) in C or C++
//   respool::c_pool pool(io.get_executor(), raw, respool::c_pool::adopt);
//   respool::c_lease l = co_await pool.async_acquire(std::chrono::seconds(1), asio::use_awaitable);
//   use(l.get());                                             // void*, or l.as<my_conn>()
#pragma once

#include <respool/respool.h>
#include <respool/error.hpp>
#include <respool/stats.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/system/errc.hpp>

#include <chrono>
#include <memory>
#include <utility>

namespace respool {

// A C status as an error_code: respool's own codes where they exist, generic ones otherwise.
inline error_code to_error_code(int status) noexcept {
    switch (status) {
    case RESPOOL_OK: return {};
    case RESPOOL_E_CLOSED: return errc::closed;
    case RESPOOL_E_TIMEOUT: return errc::timeout;
    case RESPOOL_E_UNAVAILABLE: return errc::unavailable;
    case RESPOOL_E_CREATE: return errc::create_failed;
    case RESPOOL_E_EXHAUSTED: return errc::exhausted;
    case RESPOOL_E_CANCELLED: return errc::cancelled;
    case RESPOOL_E_INVALID:
        return boost::system::errc::make_error_code(boost::system::errc::invalid_argument);
    default: return boost::system::errc::make_error_code(boost::system::errc::state_not_recoverable);
    }
}

// Move-only; returns the resource on destruction (respool_release), or destroys it with poison().
class c_lease {
public:
    c_lease() noexcept = default;
    c_lease(respool_pool* p, void* r) noexcept : pool_(p), r_(r) {}
    c_lease(c_lease&& o) noexcept
        : pool_(std::exchange(o.pool_, nullptr)), r_(std::exchange(o.r_, nullptr)) {}
    c_lease& operator=(c_lease&& o) noexcept {
        if (this != &o) {
            release();
            pool_ = std::exchange(o.pool_, nullptr);
            r_ = std::exchange(o.r_, nullptr);
        }
        return *this;
    }
    c_lease(const c_lease&) = delete;
    c_lease& operator=(const c_lease&) = delete;
    ~c_lease() { release(); }

    explicit operator bool() const noexcept { return r_ != nullptr; }
    void* get() const noexcept { return r_; }
    template <class U>
    U* as() const noexcept {
        return static_cast<U*>(r_);
    }
    void release() noexcept {
        if (r_) respool_release(std::exchange(pool_, nullptr), std::exchange(r_, nullptr));
    }
    void poison() noexcept {
        if (r_) respool_release_broken(std::exchange(pool_, nullptr), std::exchange(r_, nullptr));
    }

private:
    respool_pool* pool_ = nullptr;
    void* r_ = nullptr;
};

class c_pool {
public:
    enum ownership { borrow, adopt };  // adopt: respool_free on destruction

    c_pool(boost::asio::any_io_executor ex, respool_pool* p, ownership own = borrow) noexcept
        : ex_(std::move(ex)), pool_(p), own_(own) {}
    c_pool(c_pool&& o) noexcept : ex_(o.ex_), pool_(std::exchange(o.pool_, nullptr)), own_(o.own_) {}
    c_pool(const c_pool&) = delete;
    c_pool& operator=(const c_pool&) = delete;
    c_pool& operator=(c_pool&&) = delete;
    ~c_pool() {
        if (own_ == adopt && pool_) respool_free(pool_);
    }

    [[nodiscard]] respool_pool* native_handle() const noexcept { return pool_; }
    [[nodiscard]] const boost::asio::any_io_executor& get_executor() const noexcept { return ex_; }

    // Handler: void(error_code, c_lease); completes on the handler's associated executor (default:
    // the executor given to the constructor), never inside this call. timeout <= 0 waits forever.
    // Cancellation: not supported (the C ABI has no cancel); use the timeout.
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(std::chrono::milliseconds timeout, CompletionToken&& token = {}) {
        return boost::asio::async_initiate<CompletionToken, void(error_code, c_lease)>(
            initiate{this}, token, static_cast<int64_t>(timeout.count()));
    }
    template <class CompletionToken = boost::asio::deferred_t>
    auto async_acquire(CompletionToken&& token = {}) {
        return async_acquire(std::chrono::milliseconds(0), std::forward<CompletionToken>(token));
    }

    c_lease try_acquire(error_code& ec) noexcept {
        void* r = nullptr;
        ec = to_error_code(respool_try_acquire(pool_, &r));
        return ec ? c_lease{} : c_lease{pool_, r};
    }
    void close() noexcept { respool_close(pool_); }
    [[nodiscard]] respool_stats stats() const noexcept {
        respool_stats s{};
        respool_get_stats(pool_, &s);
        return s;
    }

private:
    template <class Handler>
    struct pending {
        using work_type = std::decay_t<decltype(boost::asio::prefer(
            std::declval<boost::asio::associated_executor_t<Handler, boost::asio::any_io_executor>>(),
            boost::asio::execution::outstanding_work.tracked))>;
        Handler handler;
        work_type work;
        respool_pool* pool;

        static void done(void* user, int status, void* r) {  // on the pool's thread
            std::unique_ptr<pending> self(static_cast<pending*>(user));
            c_lease l = r ? c_lease{self->pool, r} : c_lease{};
            boost::asio::post(self->work, boost::asio::append(std::move(self->handler), to_error_code(status),
                                                              std::move(l)));
        }
    };

    struct initiate {
        c_pool* self;
        template <class Handler>
        void operator()(Handler&& handler, int64_t timeout_ms) const {
            using H = std::decay_t<Handler>;
            auto ex = boost::asio::get_associated_executor(handler, self->ex_);
            auto* state = new pending<H>{
                std::forward<Handler>(handler),
                boost::asio::prefer(ex, boost::asio::execution::outstanding_work.tracked), self->pool_};
            const int st = respool_acquire_async(self->pool_, timeout_ms, &pending<H>::done, state);
            if (st != RESPOOL_OK) {  // not started: complete with the reason, through the executor
                std::unique_ptr<pending<H>> owned(state);
                boost::asio::post(owned->work, boost::asio::append(std::move(owned->handler),
                                                                   to_error_code(st), c_lease{}));
            }
        }
    };

    boost::asio::any_io_executor ex_;
    respool_pool* pool_;
    ownership own_;
};

}  // namespace respool
