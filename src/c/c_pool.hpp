// The C pool's internals shared by the C ABI's entry points (respool_c.cpp) and the adapters that call
// the user's C callbacks behind the pool's C++ interfaces (c_callbacks.cpp).
#pragma once

#include <respool/respool.h>
#include <respool/basic_pool.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <pthread.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>

namespace respool::c_abi {

// A resource of a C pool: the caller's pointer, and whether it is lent out now (release validation).
struct c_resource {
    void* ptr = nullptr;
    bool lent = false;  // under respool_pool::mu
};
// The node the pool keeps it in (made by the create hook, freed by the destroy hook).
struct c_node final : basic_node {
    explicit c_node(c_resource v) noexcept : value(v) {}
    c_resource value;
};

}  // namespace respool::c_abi

// The pool options behind the opaque respool_options (c_options.cpp).
struct respool_options {
    respool::pool_options o;
};

struct respool_pool {
    boost::asio::io_context io{1};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{io.get_executor()};
    std::thread thread;
    std::thread::id thread_id;
    respool_hooks2 hooks{};            // v1 hooks are copied into the v2 layout (validate absent)
    bool create_status_as_is = false;  // v2: a failing create's own code reaches the acquire it fails
    std::optional<respool::duration> default_timeout;  // RESPOOL_OPT_ACQUIRE_TIMEOUT_MS
    std::optional<respool::basic_pool> basic;          // made in place: one load less on every call

    // Which resources exist (create must return new pointers; release finds the node of a pointer).
    // Entries are made per creation, never per lend: lending only flips c_resource::lent.
    std::mutex mu;
    std::unordered_map<void*, respool::c_abi::c_node*> live;
    std::size_t lent = 0;        // resources lent out now
    std::uint64_t inflight = 0;  // acquires under way (blocking or async)
    bool freed = false;
    bool finishing = false;
    bool deleted_by_own_thread = false;  // finish() ran on the pool's thread: it deletes the handle
};

namespace respool::c_abi {

// A C++ error as a C status code (a v2 pool's create failure: the create callback's own code).
int status_of(const error_code& ec) noexcept;
// The error a create callback's own non-zero code becomes (status_of gives the code back).
error_code create_status_error(int status) noexcept;

// respool_last_error(): this thread's text of its last failed call (c_last_error.cpp).
void set_last_error(std::string_view text) noexcept;
void clear_last_error() noexcept;
// Milliseconds from C as a pool duration: anything beyond 100 years is 100 years, so neither the
// conversion (64-bit nanoseconds, about 292 years) nor a deadline now + d can overflow.
constexpr std::int64_t max_c_ms = std::int64_t{36525} * 24 * 3600 * 1000;  // 100 years of 365.25 days
static_assert(std::chrono::milliseconds(max_c_ms) < respool::duration::max() / 2);
inline respool::duration duration_of_ms(std::int64_t ms) noexcept {
    return std::chrono::milliseconds(ms < max_c_ms ? ms : max_c_ms);
}

// An enum argument from C as its integer. C passes any int (an unknown circuit state or option id must
// give RESPOOL_E_INVALID), but in C++ reading an enum object whose value is outside the enum's range is
// undefined (clang's UBSan: "load of value 7, which is not a valid value for type ..."): copy its bytes.
template <class E>
std::underlying_type_t<E> raw_enum(const E& e) noexcept {
    std::underlying_type_t<E> v;
    std::memcpy(&v, &e, sizeof v);
    return v;
}

// Sets the text and returns the status, for `return fail(RESPOOL_E_INVALID, "...")`.
inline int fail(int status, std::string_view text) noexcept {
    set_last_error(text);
    return status;
}

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
std::unique_ptr<basic_hooks> make_hooks(respool_pool* p);
std::shared_ptr<circuit_strategy> make_strategy(const respool_circuit_strategy& s, respool_pool* p);

}  // namespace respool::c_abi
