/* The C ABI exercised from C11 (-Wall -Wextra -pedantic -Werror), linked against the installed
 * librespool found through pkg-config. Every entry point, every status code, the macros and the
 * table, blocking acquires from several threads (FIFO, no barging, timeouts, close waking them),
 * respool_acquire_async, and every bad input. Exits non-zero on the first failed check. */
#define _POSIX_C_SOURCE 200809L
#include <respool/respool.h>

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures = 0;
#include "check.h"

/* ---- a resource with a life counter ------------------------------------------------------- */

typedef struct res {
    int id;
} res;

typedef struct ctx {
    atomic_int created, destroyed, next_id, fail_creates, reject_id, unhealthy_id, broken_id;
    atomic_int asked, reject_all; /* before_acquire calls; nonzero: before_acquire always says no */
} ctx;

static int c_create(void* c, void** out) {
    ctx* x = c;
    if (atomic_load(&x->fail_creates)) return -1;
    res* r = malloc(sizeof *r);
    if (!r) return -1;
    r->id = atomic_fetch_add(&x->next_id, 1) + 1;
    atomic_fetch_add(&x->created, 1);
    *out = r;
    return 0;
}
static void c_destroy(void* c, void* r) {
    atomic_fetch_add(&((ctx*)c)->destroyed, 1);
    free(r);
}
static bool c_before_acquire(void* c, void* r) {
    atomic_fetch_add(&((ctx*)c)->asked, 1);
    if (atomic_load(&((ctx*)c)->reject_all)) return false;
    return ((res*)r)->id != atomic_load(&((ctx*)c)->reject_id);
}
static bool c_healthcheck(void* c, void* r) {
    return ((res*)r)->id != atomic_load(&((ctx*)c)->unhealthy_id);
}
static bool c_before_release(void* c, void* r) {
    return ((res*)r)->id != atomic_load(&((ctx*)c)->broken_id);
}

static respool_hooks hooks_for(ctx* x) {
    respool_hooks h;
    memset(&h, 0, sizeof h);
    h.ctx = x;
    h.create = c_create;
    h.destroy = c_destroy;
    h.before_acquire = c_before_acquire;
    h.healthcheck = c_healthcheck;
    h.before_release = c_before_release;
    return h;
}

/* A pool over `x` (counters zeroed unless `keep` says the test set them) with the hooks above. */
static respool_pool* open_pool(ctx* x, bool keep, uint32_t min, uint32_t max, uint32_t healthcheck_ms,
                               uint32_t max_waiters) {
    if (!keep) memset(x, 0, sizeof *x);
    respool_hooks h = hooks_for(x);
    respool_config cfg = {min, max, healthcheck_ms, max_waiters};
    respool_pool* p = NULL;
    CHECK_STATUS(respool_create(&cfg, &h, &p), RESPOOL_OK);
    return p;
}

static void sleep_ms(int ms) {
    struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

static respool_stats stats_of(respool_pool* p) {
    respool_stats s;
    memset(&s, 0, sizeof s);
    CHECK_STATUS(respool_get_stats(p, &s), RESPOOL_OK);
    return s;
}

/* Waits (bounded) until the pool reports `n` waiters: the deterministic step before a release. */
static void wait_for_waiting(respool_pool* p, uint32_t n) {
    for (int i = 0; i < 20000 && stats_of(p).waiting != n; ++i) sleep_ms(1);
    CHECK(stats_of(p).waiting == n);
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_status_strings(void) {
    const int codes[] = {
        RESPOOL_OK,       RESPOOL_E_INVALID,   RESPOOL_E_CLOSED,    RESPOOL_E_TIMEOUT,  RESPOOL_E_UNAVAILABLE,
        RESPOOL_E_CREATE, RESPOOL_E_EXHAUSTED, RESPOOL_E_CANCELLED, RESPOOL_E_INTERNAL, 12345};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; ++i) {
        const char* s = respool_status_string(codes[i]);
        CHECK(s != NULL && s[0] != '\0');
    }
    CHECK(strcmp(respool_status_string(RESPOOL_E_CLOSED), respool_status_string(RESPOOL_E_TIMEOUT)) != 0);
    /* A code respool does not have (a v2 create callback's own code, a typo, the extremes): one static
     * "unknown" text, never NULL, never the text of a real code. */
    const int unknown[] = {12345, 1, 42, -8, -98, -100, INT_MIN, INT_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; ++i) {
        const char* s = respool_status_string(unknown[i]);
        CHECK(s != NULL && strcmp(s, "unknown respool status") == 0);
        for (size_t k = 0; k + 1 < sizeof codes / sizeof codes[0]; ++k) /* all but 12345 are known */
            CHECK(strcmp(s, respool_status_string(codes[k])) != 0);
    }
}

static void test_bad_inputs(void) {
    ctx x;
    memset(&x, 0, sizeof x);
    respool_hooks h = hooks_for(&x);
    respool_config cfg = {1, 2, 0, 0};
    respool_pool* p = NULL;
    CHECK_STATUS(respool_create(NULL, &h, &p), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_create(&cfg, NULL, &p), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_create(&cfg, &h, NULL), RESPOOL_E_INVALID);
    respool_config zero = {0, 0, 0, 0};
    CHECK_STATUS(respool_create(&zero, &h, &p), RESPOOL_E_INVALID);
    respool_config inverted = {3, 2, 0, 0};
    CHECK_STATUS(respool_create(&inverted, &h, &p), RESPOOL_E_INVALID);
    respool_hooks no_create = h;
    no_create.create = NULL;
    CHECK_STATUS(respool_create(&cfg, &no_create, &p), RESPOOL_E_INVALID);
    CHECK(p == NULL);
    CHECK(atomic_load(&x.created) == 0); /* nothing was created */

    CHECK_STATUS(respool_create(&cfg, &h, &p), RESPOOL_OK);
    void* r = NULL;
    CHECK_STATUS(respool_try_acquire(NULL, &r), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_try_acquire(p, NULL), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_acquire(NULL, &r, 10), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_acquire(p, NULL, 10), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_acquire_async(NULL, 0, NULL, NULL), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_acquire_async(p, 0, NULL, NULL), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_get_stats(p, NULL), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_get_stats(NULL, NULL), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_get_circuit_state(p, NULL), RESPOOL_E_INVALID);
    respool_circuit_state cs = RESPOOL_CIRCUIT_HALF_OPEN;
    CHECK_STATUS(respool_get_circuit_state(NULL, &cs), RESPOOL_E_INVALID);
    CHECK(cs == RESPOOL_CIRCUIT_HALF_OPEN); /* nothing written */
    CHECK_STATUS(respool_set_circuit_state(NULL, RESPOOL_CIRCUIT_OPEN), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_set_circuit_state(p, (respool_circuit_state)42), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_set_circuit_strategy(NULL, NULL), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_close(NULL), RESPOOL_E_INVALID);
    respool_free(NULL); /* a no-op: nothing crashes, the next call works */
    respool_free(NULL);

    CHECK_STATUS(respool_try_acquire(p, &r), RESPOOL_OK);
    respool_stats before = stats_of(p);
    int stranger = 7;
    CHECK_STATUS(respool_release(p, &stranger), RESPOOL_E_INVALID); /* never lent */
    CHECK_STATUS(respool_release(p, NULL), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_release(NULL, r), RESPOOL_E_INVALID);
    CHECK_STATUS(respool_release_broken(p, &stranger), RESPOOL_E_INVALID);
    respool_stats after = stats_of(p);
    CHECK(memcmp(&before, &after, sizeof before) == 0); /* the pool is exactly as it was */
    CHECK_STATUS(respool_release(p, r), RESPOOL_OK);
    CHECK_STATUS(respool_release(p, r), RESPOOL_E_INVALID); /* double release */
    CHECK_STATUS(respool_release_broken(p, r), RESPOOL_E_INVALID);
    after = stats_of(p);
    CHECK(after.idle == 1 && after.total == 1 && after.acquires == 1);
    respool_free(p);
    CHECK(atomic_load(&x.created) == atomic_load(&x.destroyed));
}

/* Values the pool's own validation rejects (max and max_waiters above INT32_MAX) are bad
 * arguments: RESPOOL_E_INVALID, nothing created; the largest accepted values still work. */
static void test_create_rejects_out_of_range_config(void) {
    ctx x;
    memset(&x, 0, sizeof x);
    respool_hooks h = hooks_for(&x);
    const respool_config bad[] = {
        {0, 0x80000000u, 0, 0}, {1, UINT32_MAX, 0, 0}, {1, 2, 0, UINT32_MAX}, {1, 2, 0, 0x80000000u}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        respool_pool* p = NULL;
        CHECK_STATUS(respool_create(&bad[i], &h, &p), RESPOOL_E_INVALID);
        CHECK(p == NULL);
    }
    CHECK(atomic_load(&x.created) == 0);
    respool_config largest = {0, 0x7fffffffu, 0, 0x7fffffffu};
    respool_pool* p = NULL;
    CHECK_STATUS(respool_create(&largest, &h, &p), RESPOOL_OK);
    if (p) {
        void* r = NULL;
        CHECK_STATUS(respool_try_acquire(p, &r), RESPOOL_OK);
        CHECK_STATUS(respool_release(p, r), RESPOOL_OK);
        respool_free(p);
    }
    CHECK(atomic_load(&x.created) == 1 && atomic_load(&x.destroyed) == 1);
}

static void test_basic_cycle_and_stats(void) {
    ctx x;
    respool_pool* p = open_pool(&x, false, 2, 3, 0, 0);
    CHECK(atomic_load(&x.created) == 2); /* min exists when create returns */
    respool_stats s = stats_of(p);
    CHECK(s.idle == 2 && s.total == 2 && s.max == 3 && s.creations == 2);

    void *a, *b, *c, *d;
    CHECK_STATUS(respool_try_acquire(p, &a), RESPOOL_OK);
    CHECK_STATUS(respool_acquire(p, &b, 100), RESPOOL_OK);
    CHECK_STATUS(respool_try_acquire(p, &c), RESPOOL_OK); /* created inline: a place was free */
    CHECK(a != b && b != c && a != c);
    CHECK_STATUS(respool_try_acquire(p, &d), RESPOOL_E_EXHAUSTED);
    CHECK_STATUS(respool_acquire(p, &d, 20), RESPOOL_E_TIMEOUT);
    s = stats_of(p);
    CHECK(s.active == 3 && s.timeouts == 1 && s.waits == 1);
    CHECK_STATUS(respool_release(p, a), RESPOOL_OK);
    CHECK_STATUS(respool_release_broken(p, b), RESPOOL_OK);
    CHECK(atomic_load(&x.destroyed) == 1);
    atomic_store(&x.broken_id, ((res*)c)->id);
    CHECK_STATUS(respool_release(p, c), RESPOOL_OK); /* before_release says broken */
    CHECK(atomic_load(&x.destroyed) == 2);
    s = stats_of(p);
    CHECK(s.poisoned == 1 && s.destructions == 2 && s.total >= 1);
    respool_free(p);
    CHECK(atomic_load(&x.created) == atomic_load(&x.destroyed));
}

static void test_macros_and_table(void) {
    const respool_api* api = respool_get_api();
    CHECK(api != NULL);
    CHECK(api->abi_version == 1u);
    CHECK(api->size >= sizeof(respool_api)); /* the table only grows: a newer library's is longer */
    CHECK(api->create == respool_create && api->acquire == respool_acquire &&
          api->try_acquire == respool_try_acquire && api->release == respool_release &&
          api->release_broken == respool_release_broken && api->close == respool_close &&
          api->free == respool_free && api->acquire_async == respool_acquire_async &&
          api->get_stats == respool_get_stats && api->get_circuit_state == respool_get_circuit_state &&
          api->set_circuit_state == respool_set_circuit_state &&
          api->set_circuit_strategy == respool_set_circuit_strategy &&
          api->status_string == respool_status_string);
    ctx x;
    memset(&x, 0, sizeof x);
    respool_hooks h = hooks_for(&x);
    respool_config cfg = {1, 1, 0, 0};
    respool_pool* p = NULL;
    CHECK_STATUS(RESPOOL_NEW_POOL(&cfg, &h, &p), RESPOOL_OK);
    void* r = NULL;
    CHECK_STATUS(RESPOOL_POOL_ACQUIRE(p, &r, 100), RESPOOL_OK);
    void* r2 = NULL;
    CHECK_STATUS(RESPOOL_POOL_TRY_ACQUIRE(p, &r2), RESPOOL_E_EXHAUSTED);
    CHECK_STATUS(RESPOOL_POOL_RELEASE(p, r), RESPOOL_OK);
    CHECK_STATUS(RESPOOL_POOL_CLOSE(p), RESPOOL_OK);
    CHECK_STATUS(RESPOOL_POOL_CLOSE(p), RESPOOL_OK); /* idempotent */
    CHECK_STATUS(RESPOOL_POOL_TRY_ACQUIRE(p, &r2), RESPOOL_E_CLOSED);
    CHECK_STATUS(RESPOOL_POOL_ACQUIRE(p, &r2, 10), RESPOOL_E_CLOSED);
    api->free(p);
    CHECK(atomic_load(&x.created) == atomic_load(&x.destroyed));
}

/* FIFO among blocked threads, and the releaser cannot barge. */
typedef struct fifo_state {
    respool_pool* p;
    pthread_mutex_t m;
    char order[16];
    int n;
} fifo_state;

typedef struct fifo_arg {
    fifo_state* st;
    char name;
} fifo_arg;

static void record(fifo_state* st, char c) {
    pthread_mutex_lock(&st->m);
    st->order[st->n++] = c;
    pthread_mutex_unlock(&st->m);
}

static void* fifo_thread(void* a) {
    fifo_arg* arg = a;
    void* r = NULL;
    int st = respool_acquire(arg->st->p, &r, 0);
    CHECK_STATUS(st, RESPOOL_OK);
    if (st == RESPOOL_OK) {
        record(arg->st, arg->name);
        CHECK_STATUS(respool_release(arg->st->p, r), RESPOOL_OK);
    }
    return NULL;
}

static void test_blocking_fifo_no_barging(void) {
    ctx x;
    memset(&x, 0, sizeof x);
    respool_hooks h = hooks_for(&x);
    respool_config cfg = {1, 1, 0, 0};
    fifo_state st;
    memset(&st, 0, sizeof st);
    pthread_mutex_init(&st.m, NULL);
    CHECK_STATUS(respool_create(&cfg, &h, &st.p), RESPOOL_OK);
    void* held = NULL;
    CHECK_STATUS(respool_acquire(st.p, &held, 100), RESPOOL_OK);
    pthread_t t[3];
    fifo_arg args[3] = {{&st, '1'}, {&st, '2'}, {&st, '3'}};
    for (int i = 0; i < 3; ++i) {
        pthread_create(&t[i], NULL, fifo_thread, &args[i]);
        wait_for_waiting(st.p, (uint32_t)(i + 1)); /* arrival order is now fixed */
    }
    CHECK_STATUS(respool_release(st.p, held), RESPOOL_OK);
    /* The releaser asks again at once: it must queue behind the three. */
    CHECK_STATUS(respool_acquire(st.p, &held, 0), RESPOOL_OK);
    record(&st, 'M');
    for (int i = 0; i < 3; ++i) pthread_join(t[i], NULL);
    st.order[st.n] = '\0';
    if (strcmp(st.order, "123M") != 0) {
        fprintf(stderr, "FIFO order was %s, want 123M\n", st.order);
        ++failures;
    }
    CHECK_STATUS(respool_release(st.p, held), RESPOOL_OK);
    respool_free(st.p);
    pthread_mutex_destroy(&st.m);
    CHECK(atomic_load(&x.created) == 1 && atomic_load(&x.destroyed) == 1);
}

/* A caller blocked in respool_acquire is woken by respool_close with RESPOOL_E_CLOSED; timeouts work
 * from several threads at once. */
typedef struct blocked_arg {
    respool_pool* p;
    int64_t timeout_ms;
    int status;
    void* resource;
} blocked_arg;

static void* blocked_thread(void* a) {
    blocked_arg* arg = a;
    arg->resource = NULL;
    arg->status = respool_acquire(arg->p, &arg->resource, arg->timeout_ms);
    return NULL;
}

static void test_close_wakes_blocked_and_timeouts(void) {
    ctx x;
    respool_pool* p = open_pool(&x, false, 1, 1, 0, 0);
    void* held = NULL;
    CHECK_STATUS(respool_try_acquire(p, &held), RESPOOL_OK);

    blocked_arg timed[3] = {{p, 15, 1, NULL}, {p, 25, 1, NULL}, {p, 5, 1, NULL}};
    pthread_t tt[3];
    for (int i = 0; i < 3; ++i) pthread_create(&tt[i], NULL, blocked_thread, &timed[i]);
    for (int i = 0; i < 3; ++i) pthread_join(tt[i], NULL);
    for (int i = 0; i < 3; ++i) CHECK_STATUS(timed[i].status, RESPOOL_E_TIMEOUT);

    blocked_arg forever[2] = {{p, 0, 1, NULL}, {p, -1, 1, NULL}};
    pthread_t tf[2];
    for (int i = 0; i < 2; ++i) pthread_create(&tf[i], NULL, blocked_thread, &forever[i]);
    wait_for_waiting(p, 2);
    CHECK_STATUS(respool_close(p), RESPOOL_OK);
    for (int i = 0; i < 2; ++i) pthread_join(tf[i], NULL);
    for (int i = 0; i < 2; ++i) CHECK_STATUS(forever[i].status, RESPOOL_E_CLOSED);
    CHECK(atomic_load(&x.destroyed) == 0); /* the lent one lives on */
    CHECK_STATUS(respool_release(p, held), RESPOOL_OK);
    CHECK(atomic_load(&x.destroyed) == 1); /* and dies on release after close */
    respool_stats s = stats_of(p);
    CHECK(s.total == 0 && s.waiting == 0 && s.timeouts == 3);
    respool_free(p);
}

/* respool_acquire_async: the callback runs exactly once, on a pool-owned thread. */
typedef struct async_state {
    pthread_mutex_t m;
    pthread_cond_t cv;
    int calls, status;
    void* resource;
    pthread_t thread;
} async_state;

static void async_cb(void* user, int status, void* resource) {
    async_state* s = user;
    pthread_mutex_lock(&s->m);
    s->calls++;
    s->status = status;
    s->resource = resource;
    s->thread = pthread_self();
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->m);
}

static void wait_calls(async_state* s, int n) {
    pthread_mutex_lock(&s->m);
    while (s->calls < n) pthread_cond_wait(&s->cv, &s->m);
    pthread_mutex_unlock(&s->m);
}

static void test_acquire_async(void) {
    ctx x;
    respool_pool* p = open_pool(&x, false, 1, 1, 0, 0);
    async_state s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.m, NULL);
    pthread_cond_init(&s.cv, NULL);

    CHECK_STATUS(respool_acquire_async(p, 100, async_cb, &s), RESPOOL_OK);
    wait_calls(&s, 1);
    CHECK_STATUS(s.status, RESPOOL_OK);
    CHECK(s.resource != NULL);
    CHECK(!pthread_equal(s.thread, pthread_self())); /* a pool-owned thread */
    void* first = s.resource;

    CHECK_STATUS(respool_acquire_async(p, 10, async_cb, &s), RESPOOL_OK); /* exhausted: times out */
    wait_calls(&s, 2);
    CHECK_STATUS(s.status, RESPOOL_E_TIMEOUT);
    CHECK(s.resource == NULL);

    CHECK_STATUS(respool_acquire_async(p, 0, async_cb, &s), RESPOOL_OK); /* parks, served by release */
    wait_for_waiting(p, 1);
    CHECK_STATUS(respool_release(p, first), RESPOOL_OK);
    wait_calls(&s, 3);
    CHECK_STATUS(s.status, RESPOOL_OK);
    CHECK(s.resource == first);
    CHECK_STATUS(respool_release(p, s.resource), RESPOOL_OK);

    CHECK_STATUS(respool_close(p), RESPOOL_OK);
    CHECK_STATUS(respool_acquire_async(p, 0, async_cb, &s), RESPOOL_OK);
    wait_calls(&s, 4);
    CHECK_STATUS(s.status, RESPOOL_E_CLOSED);
    CHECK(s.calls == 4); /* one call per acquire so far */
    respool_free(p);
    pthread_cond_destroy(&s.cv);
    pthread_mutex_destroy(&s.m);
    CHECK(atomic_load(&x.created) == atomic_load(&x.destroyed));
}

static int calls_of(async_state* s) {
    pthread_mutex_lock(&s->m);
    int n = s->calls;
    pthread_mutex_unlock(&s->m);
    return n;
}

/* A blocking acquire on its own thread, with a flag that says it has returned. */
typedef struct timed_arg {
    respool_pool* p;
    int64_t timeout_ms;
    int status;
    void* resource;
    atomic_int done;
} timed_arg;

static void* timed_thread(void* a) {
    timed_arg* arg = a;
    arg->status = respool_acquire(arg->p, &arg->resource, arg->timeout_ms);
    atomic_store(&arg->done, 1);
    return NULL;
}

/* A timeout too large for the clock's nanosecond count (above about 9.2e12 ms) is a very long
 * deadline, not an overflow that has already expired: served at once when a place is free, parked
 * (not timed out) when none is, and served by the next release. */
static void test_huge_timeout_is_a_long_deadline(void) {
    const int64_t huge[] = {INT64_MAX, 10000000000000LL};
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; ++i) {
        ctx x;
        respool_pool* p = open_pool(&x, false, 0, 1, 0, 0); /* cold: the first acquire creates */
        async_state s;
        memset(&s, 0, sizeof s);
        pthread_mutex_init(&s.m, NULL);
        pthread_cond_init(&s.cv, NULL);

        CHECK_STATUS(respool_acquire_async(p, huge[i], async_cb, &s), RESPOOL_OK);
        wait_calls(&s, 1);
        CHECK_STATUS(s.status, RESPOOL_OK);
        void* held = s.resource;
        CHECK(held != NULL);

        /* Exhausted: the async acquire parks. It either parks or completes; which one is decided
         * before the release below, so nothing here depends on timing. */
        CHECK_STATUS(respool_acquire_async(p, huge[i], async_cb, &s), RESPOOL_OK);
        for (int k = 0; k < 20000 && calls_of(&s) == 1 && stats_of(p).waiting != 1; ++k) sleep_ms(1);
        CHECK(calls_of(&s) == 1); /* not completed with RESPOOL_E_TIMEOUT */
        CHECK(stats_of(p).waiting == 1);
        CHECK_STATUS(respool_release(p, held), RESPOOL_OK);
        wait_calls(&s, 2);
        CHECK_STATUS(s.status, RESPOOL_OK);
        CHECK(s.resource == held);
        held = s.resource;

        /* The same for a blocking acquire. */
        timed_arg t;
        memset(&t, 0, sizeof t);
        t.p = p;
        t.timeout_ms = huge[i];
        pthread_t th;
        pthread_create(&th, NULL, timed_thread, &t);
        for (int k = 0; k < 20000 && !atomic_load(&t.done) && stats_of(p).waiting != 1; ++k) sleep_ms(1);
        CHECK(!atomic_load(&t.done)); /* not returned with RESPOOL_E_TIMEOUT */
        CHECK(stats_of(p).waiting == 1);
        CHECK_STATUS(respool_release(p, held), RESPOOL_OK);
        pthread_join(th, NULL);
        CHECK_STATUS(t.status, RESPOOL_OK);
        CHECK(t.resource == held);
        CHECK_STATUS(respool_release(p, t.resource), RESPOOL_OK);

        /* With an idle resource, both kinds are served at once. */
        void* r = NULL;
        CHECK_STATUS(respool_acquire(p, &r, huge[i]), RESPOOL_OK);
        CHECK_STATUS(respool_release(p, r), RESPOOL_OK);
        CHECK_STATUS(respool_acquire_async(p, huge[i], async_cb, &s), RESPOOL_OK);
        wait_calls(&s, 3);
        CHECK_STATUS(s.status, RESPOOL_OK);
        if (s.resource) CHECK_STATUS(respool_release(p, s.resource), RESPOOL_OK);

        respool_stats st = stats_of(p);
        CHECK(st.timeouts == 0 && st.waiting == 0);
        respool_free(p);
        pthread_cond_destroy(&s.cv);
        pthread_mutex_destroy(&s.m);
        CHECK(atomic_load(&x.created) == 1 && atomic_load(&x.destroyed) == 1);
    }
}

/* A blocking respool_acquire from inside one of the pool's callbacks returns RESPOOL_E_INVALID on
 * whichever thread the callback runs: create and before_release on the caller's thread, the async
 * callback on the pool's own thread. Non-blocking calls from callbacks still work. */
typedef struct nested_ctx {
    respool_pool* pool;
    atomic_int created, destroyed, armed, nested_status, stats_status, try_status;
} nested_ctx;

static void nested_acquire(nested_ctx* n) {
    void* r = NULL;
    int st = respool_acquire(n->pool, &r, 50);
    if (st == RESPOOL_OK) respool_release(n->pool, r);
    atomic_store(&n->nested_status, st);
    respool_stats s;
    atomic_store(&n->stats_status, respool_get_stats(n->pool, &s));
    st = respool_try_acquire(n->pool, &r); /* max 1, and the one place is in use: exhausted */
    if (st == RESPOOL_OK) respool_release(n->pool, r);
    atomic_store(&n->try_status, st);
}
static int n_create(void* c, void** out) {
    nested_ctx* n = c;
    res* r = malloc(sizeof *r);
    if (!r) return -1;
    r->id = atomic_fetch_add(&n->created, 1) + 1;
    *out = r;
    if (atomic_exchange(&n->armed, 0)) nested_acquire(n);
    return 0;
}
static void n_destroy(void* c, void* r) {
    atomic_fetch_add(&((nested_ctx*)c)->destroyed, 1);
    free(r);
}
static bool n_before_release(void* c, void* r) {
    (void)r;
    nested_ctx* n = c;
    if (atomic_exchange(&n->armed, 0)) nested_acquire(n);
    return true;
}
static void nested_async_cb(void* user, int status, void* resource) {
    nested_ctx* n = user;
    (void)status;
    nested_acquire(n);
    if (resource) respool_release(n->pool, resource);
    atomic_store(&n->armed, 2); /* done */
}

static void test_nested_blocking_acquire_from_callbacks(void) {
    nested_ctx n;
    memset(&n, 0, sizeof n);
    respool_hooks h;
    memset(&h, 0, sizeof h);
    h.ctx = &n;
    h.create = n_create;
    h.destroy = n_destroy;
    h.before_release = n_before_release;
    respool_config cfg = {0, 1, 0, 0};
    CHECK_STATUS(respool_create(&cfg, &h, &n.pool), RESPOOL_OK);

    void* r = NULL;
    atomic_store(&n.nested_status, 1);
    atomic_store(&n.armed, 1);
    CHECK_STATUS(respool_try_acquire(n.pool, &r), RESPOOL_OK); /* create runs on this thread */
    CHECK_STATUS(atomic_load(&n.nested_status), RESPOOL_E_INVALID);
    CHECK_STATUS(atomic_load(&n.stats_status), RESPOOL_OK);
    CHECK_STATUS(atomic_load(&n.try_status), RESPOOL_E_EXHAUSTED);

    atomic_store(&n.nested_status, 1);
    atomic_store(&n.armed, 1);
    CHECK_STATUS(respool_release(n.pool, r), RESPOOL_OK); /* before_release runs on this thread */
    CHECK_STATUS(atomic_load(&n.nested_status), RESPOOL_E_INVALID);

    atomic_store(&n.nested_status, 1);
    CHECK_STATUS(respool_acquire_async(n.pool, 0, nested_async_cb, &n), RESPOOL_OK);
    for (int i = 0; i < 20000 && atomic_load(&n.armed) != 2; ++i) sleep_ms(1);
    CHECK(atomic_load(&n.armed) == 2);
    CHECK_STATUS(atomic_load(&n.nested_status), RESPOOL_E_INVALID);

    /* Outside the callbacks the same thread acquires normally. */
    CHECK_STATUS(respool_acquire(n.pool, &r, 50), RESPOOL_OK);
    CHECK_STATUS(respool_release(n.pool, r), RESPOOL_OK);
    respool_free(n.pool);
    CHECK(atomic_load(&n.created) == 1 && atomic_load(&n.destroyed) == 1);
}

/* Circuit breaker: manual states and a strategy. */
typedef struct strat_state {
    atomic_int ok, bad, last_status;
} strat_state;
static void on_success(void* c, respool_pool* p) {
    (void)p;
    atomic_fetch_add(&((strat_state*)c)->ok, 1);
}
static void on_failure(void* c, respool_pool* p, int status) {
    atomic_fetch_add(&((strat_state*)c)->bad, 1);
    atomic_store(&((strat_state*)c)->last_status, status);
    respool_set_circuit_state(p, RESPOOL_CIRCUIT_OPEN); /* trip on the first failure */
}

static void test_circuit(void) {
    ctx x;
    respool_pool* p = open_pool(&x, false, 1, 2, 0, 0);
    respool_circuit_state cs = RESPOOL_CIRCUIT_OPEN;
    CHECK_STATUS(respool_get_circuit_state(p, &cs), RESPOOL_OK);
    CHECK(cs == RESPOOL_CIRCUIT_CLOSED);
    CHECK_STATUS(respool_set_circuit_state(p, RESPOOL_CIRCUIT_OPEN), RESPOOL_OK);
    void* r = NULL;
    CHECK_STATUS(respool_try_acquire(p, &r), RESPOOL_E_UNAVAILABLE);
    CHECK_STATUS(respool_acquire(p, &r, 100), RESPOOL_E_UNAVAILABLE);
    CHECK_STATUS(respool_set_circuit_state(p, RESPOOL_CIRCUIT_HALF_OPEN), RESPOOL_OK);
    CHECK_STATUS(respool_get_circuit_state(p, &cs), RESPOOL_OK);
    CHECK(cs == RESPOOL_CIRCUIT_HALF_OPEN);
    CHECK_STATUS(respool_set_circuit_state(p, RESPOOL_CIRCUIT_CLOSED), RESPOOL_OK);
    CHECK(stats_of(p).unavailable_rejections == 2);

    strat_state ss;
    memset(&ss, 0, sizeof ss);
    respool_circuit_strategy strat = {&ss, on_success, on_failure};
    CHECK_STATUS(respool_set_circuit_strategy(p, &strat), RESPOOL_OK);
    CHECK_STATUS(respool_try_acquire(p, &r), RESPOOL_OK);
    CHECK_STATUS(respool_release(p, r), RESPOOL_OK);
    CHECK(atomic_load(&ss.ok) == 1);
    CHECK_STATUS(respool_try_acquire(p, &r), RESPOOL_OK);
    CHECK_STATUS(respool_release_broken(p, r), RESPOOL_OK);
    CHECK(atomic_load(&ss.bad) == 1);
    CHECK_STATUS(respool_get_circuit_state(p, &cs), RESPOOL_OK);
    CHECK(cs == RESPOOL_CIRCUIT_OPEN);                               /* the strategy opened it */
    CHECK_STATUS(respool_set_circuit_strategy(p, NULL), RESPOOL_OK); /* detach */
    CHECK_STATUS(respool_set_circuit_state(p, RESPOOL_CIRCUIT_CLOSED), RESPOOL_OK);
    CHECK_STATUS(respool_try_acquire(p, &r), RESPOOL_OK);
    CHECK_STATUS(respool_release_broken(p, r), RESPOOL_OK);
    CHECK(atomic_load(&ss.bad) == 1); /* detached: no more reports */
    respool_free(p);
}

/* A strategy whose callbacks are NULL: the missing report is skipped, nothing crashes; a strategy of
 * NULL detaches. */
static void test_strategy_with_null_callbacks(void) {
    ctx x;
    respool_pool* p = open_pool(&x, false, 1, 2, 0, 0);
    strat_state ss;
    memset(&ss, 0, sizeof ss);
    respool_circuit_strategy none = {&ss, NULL, NULL};
    CHECK_STATUS(respool_set_circuit_strategy(p, &none), RESPOOL_OK);
    void* r = NULL;
    CHECK_STATUS(respool_try_acquire(p, &r), RESPOOL_OK);
    CHECK_STATUS(respool_release(p, r), RESPOOL_OK); /* a success: report_success is NULL */
    CHECK_STATUS(respool_try_acquire(p, &r), RESPOOL_OK);
    CHECK_STATUS(respool_release_broken(p, r), RESPOOL_OK); /* a failure: report_failure is NULL */
    respool_circuit_strategy failures_only = {&ss, NULL, on_failure};
    CHECK_STATUS(respool_set_circuit_strategy(p, &failures_only), RESPOOL_OK);
    CHECK_STATUS(respool_try_acquire(p, &r), RESPOOL_OK);
    CHECK_STATUS(respool_release(p, r), RESPOOL_OK);
    CHECK(atomic_load(&ss.ok) == 0 && atomic_load(&ss.bad) == 0);
    CHECK_STATUS(respool_try_acquire(p, &r), RESPOOL_OK);
    CHECK_STATUS(respool_release_broken(p, r), RESPOOL_OK);
    CHECK(atomic_load(&ss.bad) == 1); /* the one callback given still runs (and opened the circuit) */
    respool_circuit_state cs = RESPOOL_CIRCUIT_CLOSED;
    CHECK_STATUS(respool_get_circuit_state(p, &cs), RESPOOL_OK);
    CHECK(cs == RESPOOL_CIRCUIT_OPEN);
    CHECK_STATUS(respool_set_circuit_strategy(p, NULL), RESPOOL_OK);
    CHECK_STATUS(respool_set_circuit_state(p, RESPOOL_CIRCUIT_CLOSED), RESPOOL_OK);
    respool_free(p);
    CHECK(atomic_load(&x.created) == atomic_load(&x.destroyed));
}

static void test_create_failures_and_hooks(void) {
    ctx x;
    memset(&x, 0, sizeof x);
    respool_hooks h = hooks_for(&x);
    atomic_store(&x.fail_creates, 1);
    respool_config warm = {1, 2, 0, 0};
    respool_pool* p = NULL;
    CHECK_STATUS(respool_create(&warm, &h, &p), RESPOOL_E_CREATE); /* min could not be created */
    CHECK(p == NULL);
    respool_config lazy = {0, 2, 0, 0};
    CHECK_STATUS(respool_create(&lazy, &h, &p), RESPOOL_OK);
    void* r = NULL;
    CHECK_STATUS(respool_try_acquire(p, &r), RESPOOL_E_CREATE);
    CHECK_STATUS(respool_acquire(p, &r, 1000), RESPOOL_E_CREATE); /* reaches the waiter at once */
    CHECK(stats_of(p).create_failures == 2);
    atomic_store(&x.fail_creates, 0);
    CHECK_STATUS(respool_acquire(p, &r, 1000), RESPOOL_OK);
    CHECK_STATUS(respool_release(p, r), RESPOOL_OK);
    /* before_acquire rejects the idle one: destroyed, a fresh one is lent */
    atomic_store(&x.reject_id, ((res*)r)->id);
    void* r2 = NULL;
    CHECK_STATUS(respool_acquire(p, &r2, 1000), RESPOOL_OK);
    CHECK(((res*)r2)->id != atomic_load(&x.reject_id));
    CHECK_STATUS(respool_release(p, r2), RESPOOL_OK);
    respool_free(p);
    CHECK(atomic_load(&x.created) == atomic_load(&x.destroyed));
}

/* before_acquire runs on every resource taken from idle, pre-warmed ones included; only one created
 * for the acquire itself skips it. An always-no hook with a floor (min) costs one replacement. */
static void test_before_acquire_runs_on_pre_warmed_resources(void) {
    ctx x;
    respool_pool* p = open_pool(&x, false, 2, 3, 0, 0);
    CHECK(stats_of(p).idle == 2);
    void *a = NULL, *b = NULL, *c = NULL;
    CHECK_STATUS(respool_try_acquire(p, &a), RESPOOL_OK);
    CHECK(atomic_load(&x.asked) == 1); /* pre-warmed, never lent: checked */
    CHECK_STATUS(respool_acquire(p, &b, 1000), RESPOOL_OK);
    CHECK(atomic_load(&x.asked) == 2);
    CHECK_STATUS(respool_try_acquire(p, &c), RESPOOL_OK); /* nothing idle: made for this acquire */
    CHECK(((res*)c)->id == 3);
    CHECK(atomic_load(&x.asked) == 2);
    CHECK_STATUS(respool_release(p, a), RESPOOL_OK);
    CHECK_STATUS(respool_release(p, b), RESPOOL_OK);
    CHECK_STATUS(respool_release(p, c), RESPOOL_OK);
    respool_free(p);
    CHECK(atomic_load(&x.created) == atomic_load(&x.destroyed));

    ctx y;
    memset(&y, 0, sizeof y);
    atomic_store(&y.reject_all, 1);
    p = open_pool(&y, true, 1, 1, 0, 0);
    void* r = NULL;
    CHECK_STATUS(respool_try_acquire(p, &r), RESPOOL_OK); /* the pre-warmed one refused, replaced */
    CHECK(r != NULL && ((res*)r)->id == 2);
    CHECK(atomic_load(&y.asked) == 1);
    CHECK(stats_of(p).destructions == 1 && atomic_load(&y.destroyed) == 1);
    CHECK_STATUS(respool_release(p, r), RESPOOL_OK);
    respool_free(p);
    CHECK(atomic_load(&y.created) == atomic_load(&y.destroyed));
}

static void test_healthcheck_runs_on_the_background(void) {
    ctx x;
    memset(&x, 0, sizeof x);
    atomic_store(&x.unhealthy_id, 1);
    respool_pool* p = open_pool(&x, true, 2, 2, 5, 0);
    for (int i = 0; i < 20000 && atomic_load(&x.destroyed) < 1; ++i) sleep_ms(1); /* waits on a counter */
    CHECK(atomic_load(&x.destroyed) >= 1);
    for (int i = 0; i < 20000 && stats_of(p).total < 2; ++i) sleep_ms(1);
    CHECK(stats_of(p).total == 2); /* replaced up to min */
    respool_free(p);
    CHECK(atomic_load(&x.created) == atomic_load(&x.destroyed));
}

/* max_waiters sheds load: beyond it a blocking acquire fails at once with RESPOOL_E_EXHAUSTED. */
static void test_max_waiters(void) {
    ctx x;
    respool_pool* p = open_pool(&x, false, 1, 1, 0, 1);
    void* held = NULL;
    CHECK_STATUS(respool_try_acquire(p, &held), RESPOOL_OK);
    blocked_arg queued = {p, 0, 1, NULL};
    pthread_t t;
    pthread_create(&t, NULL, blocked_thread, &queued);
    wait_for_waiting(p, 1);
    void* r = NULL;
    CHECK_STATUS(respool_acquire(p, &r, 0), RESPOOL_E_EXHAUSTED);
    CHECK_STATUS(respool_release(p, held), RESPOOL_OK); /* serves the queued thread */
    pthread_join(t, NULL);
    CHECK_STATUS(queued.status, RESPOOL_OK);
    respool_free(p); /* the queued thread's resource is still lent: freed on its release */
    CHECK(atomic_load(&x.destroyed) == 0);
    respool_stats s;
    CHECK_STATUS(respool_get_stats(p, &s), RESPOOL_OK); /* the handle stays usable while lent */
    CHECK(s.active == 1 && s.total == 1);
    CHECK(queued.resource == held); /* the released resource went to the queued thread */
    CHECK_STATUS(respool_release(p, queued.resource), RESPOOL_OK); /* the last release frees the pool */
    CHECK(atomic_load(&x.created) == 1 && atomic_load(&x.destroyed) == 1);
}

static void test_free_with_resources_lent(void) {
    ctx x;
    respool_pool* p = open_pool(&x, false, 2, 2, 0, 0);
    void* r = NULL;
    CHECK_STATUS(respool_try_acquire(p, &r), RESPOOL_OK);
    respool_free(p); /* closes; the idle one dies now */
    CHECK(atomic_load(&x.destroyed) == 1);
    CHECK_STATUS(respool_release(p, r), RESPOOL_OK); /* the last release frees the handle */
    CHECK(atomic_load(&x.destroyed) == 2);
}

int main(void) {
    test_status_strings();
    test_bad_inputs();
    test_create_rejects_out_of_range_config();
    test_basic_cycle_and_stats();
    test_macros_and_table();
    test_blocking_fifo_no_barging();
    test_close_wakes_blocked_and_timeouts();
    test_acquire_async();
    test_huge_timeout_is_a_long_deadline();
    test_nested_blocking_acquire_from_callbacks();
    test_circuit();
    test_strategy_with_null_callbacks();
    test_create_failures_and_hooks();
    test_before_acquire_runs_on_pre_warmed_resources();
    test_healthcheck_runs_on_the_background();
    test_max_waiters();
    test_free_with_resources_lent();
    if (failures) {
        fprintf(stderr, "c_api_test: %d check(s) failed\n", failures);
        return 1;
    }
    printf("c_api_test: all checks passed\n");
    return 0;
}
