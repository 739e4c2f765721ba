/* respool C ABI: the pool over void* resources, for C code, other languages (ctypes, cgo, Rust FFI)
 * and plugins. Valid C11 and C++. Every entry point returns a status code; nothing thrown in C++
 * crosses this boundary. See docs/04-c-api.md.
 *
 * Threads: every function may be called from any thread. Callbacks run on the thread that made the
 * call needing them (create on the acquiring or releasing thread, before_release on the releasing
 * thread, ...) and on the pool's own background thread (healthcheck, respool_acquire_async
 * completions, replenishment); different resources may be in different callbacks at once.
 * respool_acquire blocks the calling thread and must not be called from a pool callback.
 */
#ifndef RESPOOL_RESPOOL_H
#define RESPOOL_RESPOOL_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define RESPOOL_EXPORT
#else
#define RESPOOL_EXPORT __attribute__((visibility("default")))
#endif

/* status codes: 0 ok, negative errors */
#define RESPOOL_OK 0
#define RESPOOL_E_INVALID -1 /* bad argument, or a resource this pool has not lent out */
#define RESPOOL_E_CLOSED -2
#define RESPOOL_E_TIMEOUT -3
#define RESPOOL_E_UNAVAILABLE -4 /* circuit breaker open */
#define RESPOOL_E_CREATE -5      /* the create callback failed */
#define RESPOOL_E_EXHAUSTED -6   /* try_acquire: nothing free now; or the waiter queue is full */
#define RESPOOL_E_CANCELLED -7
#define RESPOOL_E_INTERNAL -99

RESPOOL_EXPORT const char* respool_status_string(int status); /* never NULL */

typedef struct respool_pool respool_pool;

typedef struct respool_hooks {
    void* ctx;                                         /* passed back to every callback */
    int (*create)(void* ctx, void** out_resource);     /* required; returns 0 on success; the resource
                                                          must be non-NULL and distinct from every live one */
    void (*destroy)(void* ctx, void* resource);        /* optional; exactly once per created resource */
    bool (*healthcheck)(void* ctx, void* resource);    /* optional; false = unhealthy */
    bool (*before_acquire)(void* ctx, void* resource); /* optional; false = reject */
    bool (*before_release)(void* ctx, void* resource); /* optional; false = broken */
} respool_hooks;

typedef struct respool_config {
    uint32_t min;                     /* created before respool_create returns */
    uint32_t max;                     /* >= 1 */
    uint32_t healthcheck_interval_ms; /* 0 = off */
    uint32_t max_waiters;             /* 0 = unbounded */
} respool_config;

RESPOOL_EXPORT int respool_create(const respool_config* config, const respool_hooks* hooks,
                                  respool_pool** out_pool);
/* Blocks the calling thread; timeout_ms <= 0 waits forever. Woken by respool_close with RESPOOL_E_CLOSED. */
RESPOOL_EXPORT int respool_acquire(respool_pool* pool, void** out_resource, int64_t timeout_ms);
RESPOOL_EXPORT int respool_try_acquire(respool_pool* pool, void** out_resource); /* never blocks */
RESPOOL_EXPORT int respool_release(respool_pool* pool, void* resource);
RESPOOL_EXPORT int respool_release_broken(respool_pool* pool, void* resource); /* destroy instead of return */
RESPOOL_EXPORT int respool_close(respool_pool* pool);                          /* idempotent */
/* Closes; the handle stays usable for releasing resources still lent, the last of which frees it. */
RESPOOL_EXPORT void respool_free(respool_pool* pool);

typedef void (*respool_acquire_cb)(void* user, int status, void* resource);
/* cb runs exactly once, on a pool-owned thread. timeout_ms <= 0 waits forever. */
RESPOOL_EXPORT int respool_acquire_async(respool_pool* pool, int64_t timeout_ms, respool_acquire_cb cb,
                                         void* user);

typedef struct respool_stats {
    uint32_t idle, active, total, waiting, max;
    uint64_t acquires, waits, timeouts, cancellations, creations, create_failures, destructions, poisoned,
        unavailable_rejections;
} respool_stats;
RESPOOL_EXPORT int respool_get_stats(respool_pool* pool, respool_stats* out);

typedef enum respool_circuit_state {
    RESPOOL_CIRCUIT_CLOSED = 0,
    RESPOOL_CIRCUIT_OPEN = 1,
    RESPOOL_CIRCUIT_HALF_OPEN = 2
} respool_circuit_state;
RESPOOL_EXPORT int respool_get_circuit_state(respool_pool* pool, respool_circuit_state* out);
RESPOOL_EXPORT int respool_set_circuit_state(respool_pool* pool, respool_circuit_state state);

typedef struct respool_circuit_strategy {
    void* ctx;
    void (*report_success)(void* ctx, respool_pool* pool);
    void (*report_failure)(void* ctx, respool_pool* pool, int status);
} respool_circuit_strategy;
/* NULL detaches; copied. Called outside the pool's lock; may call respool_set_circuit_state. */
RESPOOL_EXPORT int respool_set_circuit_strategy(respool_pool* pool, const respool_circuit_strategy* strategy);

/* The function table: every function above, reachable at run time. */
typedef struct respool_api {
    uint32_t abi_version; /* 1 */
    uint32_t size;        /* sizeof(respool_api), for forward compatibility */
    int (*create)(const respool_config* config, const respool_hooks* hooks, respool_pool** out_pool);
    int (*acquire)(respool_pool* pool, void** out_resource, int64_t timeout_ms);
    int (*try_acquire)(respool_pool* pool, void** out_resource);
    int (*release)(respool_pool* pool, void* resource);
    int (*release_broken)(respool_pool* pool, void* resource);
    int (*close)(respool_pool* pool);
    void (*free)(respool_pool* pool);
    int (*acquire_async)(respool_pool* pool, int64_t timeout_ms, respool_acquire_cb cb, void* user);
    int (*get_stats)(respool_pool* pool, respool_stats* out);
    int (*get_circuit_state)(respool_pool* pool, respool_circuit_state* out);
    int (*set_circuit_state)(respool_pool* pool, respool_circuit_state state);
    int (*set_circuit_strategy)(respool_pool* pool, const respool_circuit_strategy* strategy);
    const char* (*status_string)(int status);
} respool_api;

#define RESPOOL_ABI_VERSION 1u

RESPOOL_EXPORT const respool_api* respool_get_api(void);

/* The macros call through the table. A consumer built against this header alone (binding with
 * dlopen/dlsym) defines RESPOOL_API to its own `const respool_api*` expression before including. */
#ifndef RESPOOL_API
#define RESPOOL_API (respool_get_api())
#endif
#define RESPOOL_NEW_POOL(config, hooks, out_pool) ((RESPOOL_API)->create((config), (hooks), (out_pool)))
#define RESPOOL_POOL_ACQUIRE(pool, out_resource, timeout_ms) \
    ((RESPOOL_API)->acquire((pool), (out_resource), (timeout_ms)))
#define RESPOOL_POOL_TRY_ACQUIRE(pool, out_resource) ((RESPOOL_API)->try_acquire((pool), (out_resource)))
#define RESPOOL_POOL_RELEASE(pool, resource) ((RESPOOL_API)->release((pool), (resource)))
#define RESPOOL_POOL_CLOSE(pool) ((RESPOOL_API)->close((pool)))

#ifdef __cplusplus
}
#endif

#endif /* RESPOOL_RESPOOL_H */
