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
#include <stddef.h>
#include <stdint.h>

#include <respool/version.h> /* RESPOOL_VERSION_STRING, ... */

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

/* ---- v2 (0.2.0): every pool option, hooks and stats that can grow, errors in words --------------
 * The v1 calls above keep working unchanged, for callers built against the v1 header too. */

/* What the last failed respool call of this thread was about, in words (e.g. "min (4) must not exceed
 * max (3)", "RESPOOL_OPT_MAX takes respool_options_set_u32"); "" when none. Never NULL; valid until
 * this thread's next respool call. */
RESPOOL_EXPORT const char* respool_last_error(void);

/* Options by id, so that new ones are new ids, never a new struct layout. Each id has one type, set
 * through the matching setter; the others refuse it with RESPOOL_E_INVALID. Defaults are those of
 * respool::pool_options (docs/02-operations.md); values are checked by respool_create2. An option never
 * set follows the ones that were (docs/01-concepts.md, "Defaults"): MAX is raised to MIN, and of
 * CREATE_RETRY_INITIAL_MS and CREATE_RETRY_MAX_MS the one not set follows the other. */
typedef enum respool_option {
    /* uint32_t: respool_options_set_u32 */
    RESPOOL_OPT_MIN = 1,                      /* created before respool_create2 returns; kept as a floor */
    RESPOOL_OPT_MAX = 2,                      /* >= 1, >= min */
    RESPOOL_OPT_MAX_WAITERS = 3,              /* 0 = unbounded */
    RESPOOL_OPT_MAX_CONCURRENT_CREATIONS = 4, /* >= 1 */
    RESPOOL_OPT_IDLE_ORDER = 5,               /* RESPOOL_IDLE_FIFO (default) or RESPOOL_IDLE_LIFO */
    /* milliseconds, int64_t: respool_options_set_ms */
    RESPOOL_OPT_ACQUIRE_TIMEOUT_MS =
        100, /* for acquires given timeout_ms <= 0; < 0 = wait forever (default) */
    RESPOOL_OPT_HEALTHCHECK_INTERVAL_MS = 101, /* 0 = off */
    RESPOOL_OPT_IDLE_TTL_MS = 102,             /* 0 = off */
    RESPOOL_OPT_MAX_LIFETIME_MS = 103,         /* 0 = off */
    RESPOOL_OPT_ACQUIRE_TTL_MS = 104,          /* leak report threshold; 0 = off */
    RESPOOL_OPT_VALIDATE_AFTER_MS = 105,       /* with RESPOOL_OPT_HEALTH_CHECK_ON_BORROW */
    RESPOOL_OPT_CREATE_RETRY_INITIAL_MS = 106, /* back-off after a failed create; 0 = retry at once */
    RESPOOL_OPT_CREATE_RETRY_MAX_MS = 107,
    /* bounds of coroutine hooks; C callbacks are synchronous and cannot be interrupted */
    RESPOOL_OPT_CREATE_TIMEOUT_MS = 108,
    RESPOOL_OPT_CHECK_TIMEOUT_MS = 109,
    RESPOOL_OPT_RESET_TIMEOUT_MS = 110,
    /* bool: respool_options_set_bool */
    RESPOOL_OPT_HEALTH_CHECK_ON_BORROW = 200, /* validate resources idle longer than validate_after */
    RESPOOL_OPT_THREAD_AFFINITY = 201,        /* a thread takes back the resource it returned, lock-free */
    RESPOOL_OPT_RECORD_TIMINGS = 202          /* wait and hold time histograms (C++ stats only) */
} respool_option;
#define RESPOOL_IDLE_FIFO 0u
#define RESPOOL_IDLE_LIFO 1u

typedef struct respool_options respool_options;            /* opaque */
RESPOOL_EXPORT respool_options* respool_options_new(void); /* the defaults; NULL when out of memory */
RESPOOL_EXPORT void respool_options_free(respool_options* options);
/* RESPOOL_E_INVALID (see respool_last_error) for an unknown id, an id of another type, or a value no
 * pool can take (a negative duration, an unknown idle order). */
RESPOOL_EXPORT int respool_options_set_u32(respool_options* options, respool_option option, uint32_t value);
RESPOOL_EXPORT int respool_options_set_ms(respool_options* options, respool_option option, int64_t value_ms);
RESPOOL_EXPORT int respool_options_set_bool(respool_options* options, respool_option option, bool value);

/* Hooks whose table can grow: struct_size first, set to sizeof(respool_hooks2) as the caller compiled it.
 * The library reads only what fits in struct_size; members beyond it count as absent. */
typedef struct respool_hooks2 {
    uint32_t struct_size;
    void* ctx;
    /* required. 0 = success; any other value is the caller's own error code, returned as is by the
     * acquire this failure fails (pick codes apart from RESPOOL_E_*, e.g. positive ones) */
    int (*create)(void* ctx, void** out_resource);
    void (*destroy)(void* ctx, void* resource);
    bool (*healthcheck)(void* ctx, void* resource); /* background; false = unhealthy */
    /* on borrow: every resource taken from idle (pre-warmed too), never one created for this acquire */
    bool (*before_acquire)(void* ctx, void* resource);
    bool (*before_release)(void* ctx, void* resource); /* false = broken */
    bool (*validate)(void* ctx, void* resource);       /* on borrow past validate_after; else healthcheck */
} respool_hooks2;

/* options NULL: the defaults. The options are copied: free them afterwards. */
RESPOOL_EXPORT int respool_create2(const respool_options* options, const respool_hooks2* hooks,
                                   respool_pool** out_pool);

/* Every gauge and counter of the pool (respool::pool_stats). struct_size first, set by the caller; the
 * library fills only the members that fit in it and leaves struct_size as it was. */
typedef struct respool_stats2 {
    uint32_t struct_size;
    uint32_t idle, active, total, waiting, max, reserved, creating;
    uint32_t circuit; /* respool_circuit_state */
    uint32_t closed;  /* 1 once closed */
    uint64_t acquires, immediate_takes, waits, timeouts, cancellations, creations, create_failures,
        destructions, poisoned, unavailable_rejections, exhausted_rejections, rejected, broken, unhealthy,
        evicted, retired, replaced, surplus, leaks, creation_retries, circuit_opened, circuit_half_opened,
        circuit_closed, probes;
} respool_stats2;
RESPOOL_EXPORT int respool_get_stats2(respool_pool* pool, respool_stats2* out);

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
    /* v2 members, appended: present when size reaches them (RESPOOL_API_HAS) */
    const char* (*last_error)(void);
    respool_options* (*options_new)(void);
    void (*options_free)(respool_options* options);
    int (*options_set_u32)(respool_options* options, respool_option option, uint32_t value);
    int (*options_set_ms)(respool_options* options, respool_option option, int64_t value_ms);
    int (*options_set_bool)(respool_options* options, respool_option option, bool value);
    int (*create2)(const respool_options* options, const respool_hooks2* hooks, respool_pool** out_pool);
    int (*get_stats2)(respool_pool* pool, respool_stats2* out);
} respool_api;
/* Whether a table (possibly from a newer or older library) has a member. */
#define RESPOOL_API_HAS(api, member) \
    ((api)->size >= offsetof(respool_api, member) + sizeof(((respool_api*)0)->member))

#define RESPOOL_ABI_VERSION 1u /* v2 only appends to the table: the version of its v1 part */

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
