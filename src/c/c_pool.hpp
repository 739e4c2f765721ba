// The C pool's internals shared by the C ABI's entry points (respool_c.cpp) and the adapters that call
// the user's C callbacks behind the pool's C++ interfaces (c_callbacks.cpp).
#pragma once

#include <respool/respool.h>
#include <respool/pool.hpp>

#include "asio/pool_impl.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <pthread.h>

#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

struct respool_pool {
    boost::asio::io_context io{1};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
    std::thread thread;
    std::thread::id thread_id;
    respool_hooks hooks{};
    std::shared_ptr<respool::detail::pool_impl> impl;

    // Which resources are lent (release validation) and which exist (create must return new ones).
    std::mutex mu;
    std::unordered_map<void*, respool::detail::resource_node*> lent;
    std::unordered_set<void*> live;
    std::uint64_t inflight = 0;  // acquires under way (blocking or async)
    bool freed = false;
    bool finishing = false;
};

namespace respool::c_abi {

using c_node = detail::typed_node<void*>;

// A C++ error as a C status code.
int status_of(const error_code& ec) noexcept;

// Marks the calling thread as inside a callback of `pool` while it runs: a blocking respool_acquire
// there would wait for the pool that is waiting for the callback. Callbacks run on the thread of the
// call that needs them as well as on the pool's own thread, so the thread alone does not tell.
// Scopes nest (a callback of one pool may call into another pool whose callbacks run in turn).
//
// The innermost scope is kept under a POSIX thread-specific key, not in a thread_local: this library
// is often dlopen'ed (plugins, FFI), where a thread_local is dynamic TLS reached through
// __tls_get_addr, whose interceptor in GCC 12's sanitizer runtime can misread such a block: the
// LeakSanitizer tracer then crashes at exit (tests/c_api/dlopen_consumer.c under asan-ubsan did, on
// every run, with a thread_local here). Without a key (creation failed) nothing is detected.
class callback_scope {
public:
    explicit callback_scope(const respool_pool* p) noexcept : pool_(p) {
        if (key().ok) {
            outer_ = static_cast<const callback_scope*>(pthread_getspecific(key().k));
            set_ = pthread_setspecific(key().k, this) == 0;
        }
    }
    ~callback_scope() {
        if (set_) pthread_setspecific(key().k, outer_);
    }
    callback_scope(const callback_scope&) = delete;
    callback_scope& operator=(const callback_scope&) = delete;

    static bool inside(const respool_pool* p) noexcept {
        if (!key().ok) return false;
        for (auto* s = static_cast<const callback_scope*>(pthread_getspecific(key().k)); s; s = s->outer_)
            if (s->pool_ == p) return true;
        return false;
    }

private:
    struct thread_key {
        pthread_key_t k{};
        bool ok = pthread_key_create(&k, nullptr) == 0;
        ~thread_key() {
            if (ok) pthread_key_delete(k);
        }
    };
    static const thread_key& key() noexcept {
        static const thread_key instance;
        return instance;
    }

    const respool_pool* pool_;
    const callback_scope* outer_ = nullptr;
    bool set_ = false;
};

// The user's C callbacks behind the pool's hooks and circuit strategy.
std::unique_ptr<detail::hooks_base> make_hooks(respool_pool* p);
std::shared_ptr<circuit_strategy> make_strategy(const respool_circuit_strategy& s, respool_pool* p);

}  // namespace respool::c_abi
