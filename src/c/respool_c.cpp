// The C ABI (include/respool/respool.h) on respool::basic_pool (the same pool as pool<T>, without
// the typed front): a thread_safe pool over void* resources, the hooks called through plain function
// pointers (no std::function), a pool-owned thread running the pool's io_context (asynchronous
// completions, health checks, timers). Every entry point catches everything: no exception crosses.
#include "c_pool.hpp"

#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

namespace asio = boost::asio;
using respool::basic_node;
using respool::errc;
using respool::error_code;
using respool::c_abi::c_node;
using respool::c_abi::callback_scope;
using respool::c_abi::fail;
using respool::c_abi::status_of;

namespace {

// timeout_ms <= 0: the pool's default (RESPOOL_OPT_ACQUIRE_TIMEOUT_MS; none, so forever, unless set);
// a positive value is a deadline (at most 100 years: duration_of_ms).
std::optional<respool::duration> timeout_of(const respool_pool* p, int64_t ms) noexcept {
    if (ms <= 0) return p->default_timeout;
    return respool::c_abi::duration_of_ms(ms);
}

// Marks a node as lent and returns its resource: a flag, no allocation (the node is in `live` since
// its creation).
void* lend(respool_pool* p, basic_node* n) noexcept {
    respool::c_abi::c_resource& r = static_cast<c_node*>(n)->value;
    std::lock_guard<std::mutex> g(p->mu);
    r.lent = true;
    ++p->lent;
    return r.ptr;
}

// The handle's lifetime. respool_free marks it freed; it is deleted when, in addition, nothing is
// lent and no operation is under way (`inflight`: blocking and async acquires, releases, the free
// itself). Every change of these conditions decides, under `mu` and in the same critical section,
// whether it was the last one (last_out); only that caller deletes the handle, and it touches
// nothing of it afterwards. Deciding in a second critical section would let another thread delete
// the handle in between.
bool last_out(respool_pool* p) noexcept {  // under p->mu
    if (!p->freed || p->finishing || p->lent != 0 || p->inflight != 0) return false;
    p->finishing = true;
    return true;
}

// Deletes the handle: joins the pool's thread, then deletes. On the pool's thread itself (the last
// release or acquire ended in a callback there), which cannot join itself, it only marks the handle:
// that thread deletes it once its run() returns (run_pool_thread). No thread is started for it, so
// there is nothing that can fail, and no thread whose only reference to the handle is its argument.
void finish(respool_pool* p) noexcept {
    p->basic.reset();  // closed, nothing lent, nothing under way: nothing of the pool outlives this
    p->work.reset();   // run() returns once the handlers still queued have run
    if (std::this_thread::get_id() == p->thread_id) {
        p->deleted_by_own_thread = true;
        return;
    }
    if (p->thread.joinable()) p->thread.join();
    delete p;
}

// The pool's own thread: its io_context (completions, health checks, timers), until finish().
void run_pool_thread(respool_pool* p) noexcept {
    p->io.run();
    if (p->deleted_by_own_thread) {  // set on this thread, by finish() in one of the handlers
        p->thread.detach();
        delete p;
    }
}

void begin_op(respool_pool* p) {
    std::lock_guard<std::mutex> g(p->mu);
    ++p->inflight;
}

// Ends an operation (and with `freed`, marks the handle freed); may delete the handle.
void end_op(respool_pool* p, bool freed = false) noexcept {
    bool last;
    {
        std::lock_guard<std::mutex> g(p->mu);
        --p->inflight;
        if (freed) p->freed = true;
        last = last_out(p);
    }
    if (last) finish(p);
}

// An operation counted from construction to destruction (which may delete the handle).
class op_scope {
public:
    explicit op_scope(respool_pool* p) : p_(p) { begin_op(p); }
    ~op_scope() { end_op(p_); }
    op_scope(const op_scope&) = delete;
    op_scope& operator=(const op_scope&) = delete;

private:
    respool_pool* p_;
};

int release_impl(respool_pool* p, void* r, bool broken) noexcept {
    if (!p || !r) return fail(RESPOOL_E_INVALID, "respool_release: the pool or the resource is NULL");
    basic_node* n;
    {
        std::lock_guard<std::mutex> g(p->mu);
        auto it = p->live.find(r);
        if (it == p->live.end() || !it->second->value.lent)  // never lent, or released twice
            return fail(RESPOOL_E_INVALID, "respool_release: this pool has not lent out this resource");
        it->second->value.lent = false;
        n = it->second;
        --p->lent;
        ++p->inflight;  // no longer lent, but the handle must live until the pool has it back
    }
    int st = RESPOOL_OK;
    try {
        p->basic->release(n, broken);
    } catch (...) {
        st = RESPOOL_E_INTERNAL;
    }
    end_op(p);
    return st;
}

}  // namespace

// Every entry point catches everything: nothing thrown in C++ (by the library or by a C++ callback)
// reaches the C caller. respool_status_string and respool_get_api call nothing that can throw.
extern "C" {

const char* respool_status_string(int status) {
    switch (status) {
    case RESPOOL_OK: return "ok";
    case RESPOOL_E_INVALID: return "invalid argument, or a resource this pool has not lent out";
    case RESPOOL_E_CLOSED: return "pool is closed";
    case RESPOOL_E_TIMEOUT: return "timed out waiting for a resource";
    case RESPOOL_E_UNAVAILABLE: return "circuit breaker is open";
    case RESPOOL_E_CREATE: return "the create callback failed";
    case RESPOOL_E_EXHAUSTED: return "pool exhausted";
    case RESPOOL_E_CANCELLED: return "acquire cancelled";
    case RESPOOL_E_INTERNAL: return "internal error";
    }
    return "unknown respool status";
}

}  // extern "C"

namespace {

// Both create calls: a thread_safe pool over the hooks, its pre-warm run here on the caller's thread,
// then the pool's own thread started.
int create_pool(respool::pool_options o, const respool_hooks2& hooks, bool create_status_as_is,
                respool_pool** out_pool) noexcept {
    std::unique_ptr<respool_pool> p;
    // On failure the pool is closed and dropped before the handle: its hooks use the handle.
    auto discard = [&p]() noexcept {
        if (p && p->basic) {
            p->basic->close();  // destroys what was created
            p->basic.reset();
        }
    };
    try {
        o.thread_safe = true;
        respool::validate(o);  // names the option: "min (4) must not exceed max (3)"
        p = std::make_unique<respool_pool>();
        p->hooks = hooks;
        p->create_status_as_is = create_status_as_is;
        p->default_timeout = o.acquire_timeout;
        p->basic.emplace(p->io.get_executor(), o, respool::c_abi::make_hooks(p.get()));
        if (p->basic->stats().idle < o.min) {
            discard();
            return fail(RESPOOL_E_CREATE, "the create callback failed during the pre-warm to min");
        }
        p->thread = std::thread([raw = p.get()] { run_pool_thread(raw); });
        p->thread_id = p->thread.get_id();
        *out_pool = p.release();
        return RESPOOL_OK;
    } catch (const std::invalid_argument& e) {
        discard();
        return fail(RESPOOL_E_INVALID, e.what());
    } catch (...) {
        discard();
        return fail(RESPOOL_E_INTERNAL, "out of memory or resources (thread) while creating the pool");
    }
}

}  // namespace

extern "C" {

int respool_create(const respool_config* config, const respool_hooks* hooks, respool_pool** out_pool) {
    respool::c_abi::clear_last_error();
    if (!config || !hooks || !out_pool) return fail(RESPOOL_E_INVALID, "respool_create: a NULL argument");
    if (!hooks->create) return fail(RESPOOL_E_INVALID, "respool_hooks.create is required");
    respool::pool_options o;
    o.min = config->min;
    o.max = config->max;
    o.healthcheck_interval = std::chrono::milliseconds(config->healthcheck_interval_ms);
    o.max_waiters = config->max_waiters;
    respool_hooks2 h{};
    h.struct_size = sizeof h;
    h.ctx = hooks->ctx;
    h.create = hooks->create;
    h.destroy = hooks->destroy;
    h.healthcheck = hooks->healthcheck;
    h.before_acquire = hooks->before_acquire;
    h.before_release = hooks->before_release;
    return create_pool(o, h, false, out_pool);  // v1: a failing create is RESPOOL_E_CREATE
}

int respool_create2(const respool_options* options, const respool_hooks2* hooks, respool_pool** out_pool) {
    respool::c_abi::clear_last_error();
    if (!hooks || !out_pool)
        return fail(RESPOOL_E_INVALID, "respool_create2: hooks and out_pool are required");
    // Only what the caller's struct holds; the rest stays absent (NULL).
    respool_hooks2 h{};
    const std::size_t n = hooks->struct_size < sizeof h ? hooks->struct_size : sizeof h;
    if (n < offsetof(respool_hooks2, create) + sizeof h.create)
        return fail(RESPOOL_E_INVALID,
                    "respool_hooks2.struct_size does not reach the create callback: set it to "
                    "sizeof(respool_hooks2)");
    std::memcpy(&h, hooks, n);
    h.struct_size = static_cast<uint32_t>(n);
    if (!h.create) return fail(RESPOOL_E_INVALID, "respool_hooks2.create is required");
    return create_pool(options ? options->o : respool::pool_options{}, h, true, out_pool);
}

int respool_try_acquire(respool_pool* pool, void** out_resource) {
    if (!pool || !out_resource) return RESPOOL_E_INVALID;
    try {
        error_code ec;
        if (basic_node* n = pool->basic->try_acquire(ec)) {
            *out_resource = lend(pool, n);
            return RESPOOL_OK;
        }
        return status_of(ec);
    } catch (...) {
        return RESPOOL_E_INTERNAL;
    }
}

int respool_acquire(respool_pool* pool, void** out_resource, int64_t timeout_ms) {
    if (!pool || !out_resource) return RESPOOL_E_INVALID;
    // From the pool's own thread, or from inside one of its callbacks on any thread: it would wait
    // for the pool that waits for it.
    if (std::this_thread::get_id() == pool->thread_id || callback_scope::inside(pool))
        return RESPOOL_E_INVALID;
    try {
        op_scope op(pool);  // respool_free may run meanwhile: the handle lives until this returns
        error_code ec;
        if (basic_node* n = pool->basic->acquire_now(ec)) {
            *out_resource = lend(pool, n);
            return RESPOOL_OK;
        }
        if (ec) return status_of(ec);
        struct blocking_wait {
            std::mutex m;
            std::condition_variable cv;
            bool done = false;
            error_code ec;
            basic_node* n = nullptr;
        } w;
        pool->basic->async_acquire(timeout_of(pool, timeout_ms), [&w](error_code e, basic_node* n) {
            std::lock_guard<std::mutex> g(w.m);
            w.ec = e;
            w.n = n;
            w.done = true;
            w.cv.notify_one();  // under the lock: `w` lives on the waiting thread's stack
        });
        {
            std::unique_lock<std::mutex> lk(w.m);
            w.cv.wait(lk, [&] { return w.done; });
        }
        if (!w.n) return status_of(w.ec);
        *out_resource = lend(pool, w.n);
        return RESPOOL_OK;
    } catch (...) {
        return RESPOOL_E_INTERNAL;
    }
}

int respool_acquire_async(respool_pool* pool, int64_t timeout_ms, respool_acquire_cb cb, void* user) {
    if (!pool || !cb) return RESPOOL_E_INVALID;
    try {
        begin_op(pool);  // ended after the callback has run
    } catch (...) {
        return RESPOOL_E_INTERNAL;
    }
    try {
        pool->basic->async_acquire(
            timeout_of(pool, timeout_ms), [pool, cb, user](error_code e, basic_node* n) {
                int st = status_of(e);
                void* r = nullptr;
                if (n) r = lend(pool, n);
                try {
                    callback_scope in(pool);
                    cb(user, st, r);
                } catch (...) {  // a C++ callback that throws: nothing crosses into the pool's thread
                }
                end_op(pool);  // may delete the handle
            });
        return RESPOOL_OK;
    } catch (...) {  // not started: the callback will not run
        end_op(pool);
        return RESPOOL_E_INTERNAL;
    }
}

int respool_release(respool_pool* pool, void* resource) {
    return release_impl(pool, resource, false);
}

int respool_release_broken(respool_pool* pool, void* resource) {
    return release_impl(pool, resource, true);
}

int respool_close(respool_pool* pool) {
    if (!pool) return RESPOOL_E_INVALID;
    try {
        pool->basic->close();
        return RESPOOL_OK;
    } catch (...) {
        return RESPOOL_E_INTERNAL;
    }
}

void respool_free(respool_pool* pool) {
    if (!pool) return;
    try {
        {
            std::lock_guard<std::mutex> g(pool->mu);
            if (pool->freed) return;
            ++pool->inflight;  // the handle cannot be deleted while this closes it
        }
        pool->basic->close();
        end_op(pool, true);  // freed: deleted now, or by the last release or acquire still under way
    } catch (...) {
    }
}

int respool_get_stats(respool_pool* pool, respool_stats* out) {
    if (!pool || !out) return RESPOOL_E_INVALID;
    try {
        const respool::pool_stats s = pool->basic->stats();
        out->idle = s.idle;
        out->active = s.active;
        out->total = s.total;
        out->waiting = s.waiting;
        out->max = s.max;
        out->acquires = s.acquires;
        out->waits = s.waits;
        out->timeouts = s.timeouts;
        out->cancellations = s.cancellations;
        out->creations = s.creations;
        out->create_failures = s.create_failures;
        out->destructions = s.destructions;
        out->poisoned = s.poisoned;
        out->unavailable_rejections = s.unavailable_rejections;
        return RESPOOL_OK;
    } catch (...) {
        return RESPOOL_E_INTERNAL;
    }
}

int respool_get_stats2(respool_pool* pool, respool_stats2* out) {
    if (!pool || !out) return fail(RESPOOL_E_INVALID, "respool_get_stats2: a NULL argument");
    if (out->struct_size < sizeof out->struct_size)
        return fail(RESPOOL_E_INVALID, "respool_stats2.struct_size must be set to sizeof(respool_stats2)");
    try {
        const respool::pool_stats s = pool->basic->stats();
        respool_stats2 all{};
        all.idle = s.idle;
        all.active = s.active;
        all.total = s.total;
        all.waiting = s.waiting;
        all.max = s.max;
        all.reserved = s.reserved;
        all.creating = s.creating;
        all.circuit = static_cast<uint32_t>(s.circuit);
        all.closed = s.closed ? 1u : 0u;
        all.acquires = s.acquires;
        all.immediate_takes = s.immediate_takes;
        all.waits = s.waits;
        all.timeouts = s.timeouts;
        all.cancellations = s.cancellations;
        all.creations = s.creations;
        all.create_failures = s.create_failures;
        all.destructions = s.destructions;
        all.poisoned = s.poisoned;
        all.unavailable_rejections = s.unavailable_rejections;
        all.exhausted_rejections = s.exhausted_rejections;
        all.rejected = s.rejected;
        all.broken = s.broken;
        all.unhealthy = s.unhealthy;
        all.evicted = s.evicted;
        all.retired = s.retired;
        all.replaced = s.replaced;
        all.surplus = s.surplus;
        all.leaks = s.leaks;
        all.creation_retries = s.creation_retries;
        all.circuit_opened = s.circuit_opened;
        all.circuit_half_opened = s.circuit_half_opened;
        all.circuit_closed = s.circuit_closed;
        all.probes = s.probes;
        // The members the caller's struct holds (an older, shorter one gets its prefix); its size stays.
        const std::size_t n = out->struct_size < sizeof all ? out->struct_size : sizeof all;
        const uint32_t size = out->struct_size;
        std::memcpy(out, &all, n);
        out->struct_size = size;
        return RESPOOL_OK;
    } catch (...) {
        return RESPOOL_E_INTERNAL;
    }
}

int respool_get_circuit_state(respool_pool* pool, respool_circuit_state* out) {
    if (!pool || !out) return RESPOOL_E_INVALID;
    try {
        *out = static_cast<respool_circuit_state>(pool->basic->breaker().state());
        return RESPOOL_OK;
    } catch (...) {
        return RESPOOL_E_INTERNAL;
    }
}

int respool_set_circuit_state(respool_pool* pool, respool_circuit_state state) {
    if (!pool) return RESPOOL_E_INVALID;
    try {
        switch (respool::c_abi::raw_enum(state)) {  // any int from C: no load of an unknown enum value
        case RESPOOL_CIRCUIT_CLOSED: pool->basic->breaker().activate(); return RESPOOL_OK;
        case RESPOOL_CIRCUIT_OPEN: pool->basic->breaker().deactivate(); return RESPOOL_OK;
        case RESPOOL_CIRCUIT_HALF_OPEN: pool->basic->breaker().recover(); return RESPOOL_OK;
        }
        return RESPOOL_E_INVALID;
    } catch (...) {
        return RESPOOL_E_INTERNAL;
    }
}

int respool_set_circuit_strategy(respool_pool* pool, const respool_circuit_strategy* strategy) {
    if (!pool) return RESPOOL_E_INVALID;
    try {
        pool->basic->set_circuit_strategy(strategy ? respool::c_abi::make_strategy(*strategy, pool)
                                                   : nullptr);
        return RESPOOL_OK;
    } catch (...) {
        return RESPOOL_E_INTERNAL;
    }
}

const respool_api* respool_get_api(void) {
    static const respool_api api = {
        RESPOOL_ABI_VERSION,
        static_cast<uint32_t>(sizeof(respool_api)),
        &respool_create,
        &respool_acquire,
        &respool_try_acquire,
        &respool_release,
        &respool_release_broken,
        &respool_close,
        &respool_free,
        &respool_acquire_async,
        &respool_get_stats,
        &respool_get_circuit_state,
        &respool_set_circuit_state,
        &respool_set_circuit_strategy,
        &respool_status_string,
        &respool_last_error,
        &respool_options_new,
        &respool_options_free,
        &respool_options_set_u32,
        &respool_options_set_ms,
        &respool_options_set_bool,
        &respool_create2,
        &respool_get_stats2,
    };
    return &api;
}

}  // extern "C"
