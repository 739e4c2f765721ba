/* The v2 part of the C ABI from C11 (-Wall -Wextra -pedantic -Werror), against the installed library:
 * options by id (every id, wrong types, unknown ids, bad values, each with its respool_last_error text),
 * respool_create2 with whole-pool validation named, hooks2 read only as far as struct_size, the create
 * callback's own code reaching the acquire it fails, the default acquire timeout, a validate hook
 * distinct from the health check, stats2 filled only as far as struct_size, and the v2 table members.
 * Exits non-zero on the first failed check. */
#define _POSIX_C_SOURCE 200809L
#include <respool/respool.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int failures = 0;
#include "check.h"
#define CHECK_ERROR_SAYS(text)                                                                    \
    do {                                                                                          \
        if (!strstr(respool_last_error(), (text))) {                                              \
            fprintf(stderr, "%s:%d: last error \"%s\" does not say \"%s\"\n", __FILE__, __LINE__, \
                    respool_last_error(), (text));                                                \
            ++failures;                                                                           \
        }                                                                                         \
    } while (0)

typedef struct ctx {
    int created, destroyed, validations, healthchecks;
    int create_status; /* what create returns; 0 = success */
} ctx;

static int create(void* c, void** out) {
    ctx* x = c;
    if (x->create_status != 0) return x->create_status;
    int* r = malloc(sizeof *r);
    if (!r) return 1;
    *r = ++x->created;
    *out = r;
    return 0;
}
static void destroy(void* c, void* r) {
    ++((ctx*)c)->destroyed;
    free(r);
}
static bool validate(void* c, void* r) {
    (void)r;
    ++((ctx*)c)->validations;
    return true;
}
static bool healthcheck(void* c, void* r) {
    (void)r;
    ++((ctx*)c)->healthchecks;
    return true;
}

static respool_hooks2 hooks_for(ctx* x) {
    respool_hooks2 h;
    memset(&h, 0, sizeof h);
    h.struct_size = sizeof h;
    h.ctx = x;
    h.create = create;
    h.destroy = destroy;
    return h;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1000.0 + (double)t.tv_nsec / 1e6;
}

static void options_by_id(void) {
    respool_options* o = respool_options_new();
    CHECK(o != NULL);
    CHECK_STATUS(respool_options_set_u32(o, RESPOOL_OPT_MIN, 1), RESPOOL_OK);
    CHECK(strcmp(respool_last_error(), "") == 0);
    CHECK_STATUS(respool_options_set_u32(o, RESPOOL_OPT_MAX, 4), RESPOOL_OK);
    CHECK_STATUS(respool_options_set_u32(o, RESPOOL_OPT_MAX_WAITERS, 100), RESPOOL_OK);
    CHECK_STATUS(respool_options_set_u32(o, RESPOOL_OPT_MAX_CONCURRENT_CREATIONS, 2), RESPOOL_OK);
    CHECK_STATUS(respool_options_set_u32(o, RESPOOL_OPT_IDLE_ORDER, RESPOOL_IDLE_LIFO), RESPOOL_OK);
    const respool_option ms[] = {RESPOOL_OPT_ACQUIRE_TIMEOUT_MS,
                                 RESPOOL_OPT_HEALTHCHECK_INTERVAL_MS,
                                 RESPOOL_OPT_IDLE_TTL_MS,
                                 RESPOOL_OPT_MAX_LIFETIME_MS,
                                 RESPOOL_OPT_ACQUIRE_TTL_MS,
                                 RESPOOL_OPT_VALIDATE_AFTER_MS,
                                 RESPOOL_OPT_CREATE_RETRY_INITIAL_MS,
                                 RESPOOL_OPT_CREATE_RETRY_MAX_MS,
                                 RESPOOL_OPT_CREATE_TIMEOUT_MS,
                                 RESPOOL_OPT_CHECK_TIMEOUT_MS,
                                 RESPOOL_OPT_RESET_TIMEOUT_MS};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; ++i)
        CHECK_STATUS(respool_options_set_ms(o, ms[i], 60000), RESPOOL_OK);
    CHECK_STATUS(respool_options_set_ms(o, RESPOOL_OPT_IDLE_TTL_MS, INT64_MAX), RESPOOL_OK); /* = 100 years */
    CHECK_STATUS(respool_options_set_bool(o, RESPOOL_OPT_HEALTH_CHECK_ON_BORROW, true), RESPOOL_OK);
    CHECK_STATUS(respool_options_set_bool(o, RESPOOL_OPT_THREAD_AFFINITY, true), RESPOOL_OK);
    CHECK_STATUS(respool_options_set_bool(o, RESPOOL_OPT_RECORD_TIMINGS, true), RESPOOL_OK);

    /* what is refused, and the words that say why */
    CHECK_STATUS(respool_options_set_ms(o, RESPOOL_OPT_MAX, 5), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("RESPOOL_OPT_MAX takes respool_options_set_u32");
    CHECK_STATUS(respool_options_set_u32(o, RESPOOL_OPT_IDLE_TTL_MS, 5), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("RESPOOL_OPT_IDLE_TTL_MS takes respool_options_set_ms");
    CHECK_STATUS(respool_options_set_bool(o, RESPOOL_OPT_MIN, true), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("RESPOOL_OPT_MIN takes respool_options_set_u32");
    CHECK_STATUS(respool_options_set_u32(o, (respool_option)999, 1), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("unknown respool_option 999");
    CHECK_STATUS(respool_options_set_ms(o, RESPOOL_OPT_CHECK_TIMEOUT_MS, -5), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("RESPOOL_OPT_CHECK_TIMEOUT_MS (-5) must not be negative");
    CHECK_STATUS(respool_options_set_u32(o, RESPOOL_OPT_IDLE_ORDER, 7), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("RESPOOL_OPT_IDLE_ORDER (7)");
    CHECK_STATUS(respool_options_set_u32(NULL, RESPOOL_OPT_MIN, 1), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("NULL");
    CHECK_STATUS(respool_options_set_ms(NULL, RESPOOL_OPT_IDLE_TTL_MS, 1), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("NULL");
    CHECK_STATUS(respool_options_set_bool(NULL, RESPOOL_OPT_RECORD_TIMINGS, true), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("NULL");
    CHECK_STATUS(respool_options_set_ms(o, RESPOOL_OPT_ACQUIRE_TIMEOUT_MS, -1), RESPOOL_OK); /* none */

    /* whole-pool rules are checked at create, named like the C++ pool names them */
    ctx x = {0};
    respool_hooks2 h = hooks_for(&x);
    respool_pool* p = NULL;
    CHECK_STATUS(respool_options_set_u32(o, RESPOOL_OPT_MIN, 5), RESPOOL_OK);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("min (5) must not exceed max (4)");
    CHECK(p == NULL && x.created == 0);
    CHECK_STATUS(respool_options_set_u32(o, RESPOOL_OPT_MIN, 1), RESPOOL_OK);
    CHECK_STATUS(respool_options_set_ms(o, RESPOOL_OPT_CHECK_TIMEOUT_MS, 0), RESPOOL_OK);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("check_timeout");
    CHECK_STATUS(respool_options_set_ms(o, RESPOOL_OPT_CHECK_TIMEOUT_MS, 1000), RESPOOL_OK);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_OK);
    CHECK(strcmp(respool_last_error(), "") == 0);
    respool_options_free(o); /* copied by create2 */
    respool_stats2 s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    CHECK_STATUS(respool_get_stats2(p, &s), RESPOOL_OK);
    CHECK(s.max == 4 && s.total == 1 && s.idle == 1 && s.creations == 1 && s.struct_size == sizeof s);
    respool_free(p);
    CHECK(x.created == x.destroyed);
}

/* respool_options_new gives the defaults (create2 with them is create2 with NULL), respool_options_free
 * takes NULL; create2 without hooks or out-pointer, and every whole-pool rule, are refused by name. */
/* An option left at its default follows the options that were set: RESPOOL_OPT_MIN of 12 alone raises
 * the max (10 by default) to 12, RESPOOL_OPT_CREATE_RETRY_MAX_MS of 5 alone lowers the initial back-off
 * (10 ms by default) to 5 ms. Both set and contradicting is refused, even at the default's value. */
static void defaults_follow_what_was_set(void) {
    ctx x = {0};
    respool_hooks2 h = hooks_for(&x);
    respool_pool* p = NULL;
    respool_options* o = respool_options_new();
    CHECK(o != NULL);
    respool_options_set_u32(o, RESPOOL_OPT_MIN, 12);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_OK);
    if (p) {
        respool_stats2 s;
        memset(&s, 0, sizeof s);
        s.struct_size = sizeof s;
        CHECK_STATUS(respool_get_stats2(p, &s), RESPOOL_OK);
        CHECK(s.max == 12 && s.total == 12 && x.created == 12);
        respool_free(p);
        p = NULL;
    }
    respool_options_set_u32(o, RESPOOL_OPT_MAX, 10); /* the default's value, set */
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("min (12) must not exceed max (10)");
    respool_options_free(o);

    o = respool_options_new();
    CHECK(o != NULL);
    respool_options_set_ms(o, RESPOOL_OPT_CREATE_RETRY_MAX_MS, 5);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_OK);
    respool_free(p);
    p = NULL;
    respool_options_set_ms(o, RESPOOL_OPT_CREATE_RETRY_INITIAL_MS, 10);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("create_retry_max (5ms) must not be below create_retry_initial (10ms)");
    respool_options_free(o);
}

static void options_new_free_and_create2_refusals(void) {
    respool_options_free(NULL); /* a no-op */
    respool_options* o = respool_options_new();
    CHECK(o != NULL);
    CHECK(strcmp(respool_last_error(), "") == 0);
    ctx x = {0};
    respool_hooks2 h = hooks_for(&x);
    respool_pool* p = NULL;
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_OK); /* the defaults: min 0, max 10 */
    respool_stats2 s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    CHECK_STATUS(respool_get_stats2(p, &s), RESPOOL_OK);
    CHECK(s.max == 10 && s.total == 0 && x.created == 0);
    respool_free(p);

    p = NULL;
    CHECK_STATUS(respool_create2(o, NULL, &p), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("hooks and out_pool are required");
    CHECK_STATUS(respool_create2(o, &h, NULL), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("hooks and out_pool are required");
    CHECK_STATUS(respool_create2(NULL, NULL, NULL), RESPOOL_E_INVALID);

    /* each whole-pool rule, named as the C++ pool names it; nothing created */
    respool_options_set_u32(o, RESPOOL_OPT_MAX, 0);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("max (0) must be at least 1");
    respool_options_set_u32(o, RESPOOL_OPT_MAX, 0x80000000u);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("max (2147483648) must not exceed 2147483647");
    respool_options_set_u32(o, RESPOOL_OPT_MAX, 4);
    respool_options_set_u32(o, RESPOOL_OPT_MAX_CONCURRENT_CREATIONS, 0);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("max_concurrent_creations (0) must be at least 1");
    respool_options_set_u32(o, RESPOOL_OPT_MAX_CONCURRENT_CREATIONS, 0x80000000u);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("max_concurrent_creations is too large");
    respool_options_set_u32(o, RESPOOL_OPT_MAX_CONCURRENT_CREATIONS, 2);
    respool_options_set_u32(o, RESPOOL_OPT_MAX_WAITERS, UINT32_MAX);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("max_waiters (4294967295) is too large");
    respool_options_set_u32(o, RESPOOL_OPT_MAX_WAITERS, 0);
    respool_options_set_ms(o, RESPOOL_OPT_CREATE_RETRY_INITIAL_MS, 50);
    respool_options_set_ms(o, RESPOOL_OPT_CREATE_RETRY_MAX_MS, 10);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("create_retry_max (10ms) must not be below create_retry_initial (50ms)");
    respool_options_set_ms(o, RESPOOL_OPT_CREATE_RETRY_MAX_MS, 50);
    const respool_option bounds[] = {RESPOOL_OPT_CREATE_TIMEOUT_MS, RESPOOL_OPT_CHECK_TIMEOUT_MS,
                                     RESPOOL_OPT_RESET_TIMEOUT_MS};
    const char* bound_names[] = {"create_timeout (0ms) must be positive",
                                 "check_timeout (0ms) must be positive",
                                 "reset_timeout (0ms) must be positive"};
    for (size_t i = 0; i < sizeof bounds / sizeof bounds[0]; ++i) {
        respool_options_set_ms(o, bounds[i], 0);
        CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_E_INVALID);
        CHECK_ERROR_SAYS(bound_names[i]);
        respool_options_set_ms(o, bounds[i], 1000);
    }
    CHECK(x.created == 0);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_OK); /* and with every value fixed, it is made */
    respool_free(p);
    respool_options_free(o);
    CHECK(x.created == x.destroyed);
}

/* respool_last_error is this thread's: "" on a thread whose calls never failed, whatever another
 * thread's last call said. */
static void* last_error_of_a_fresh_thread(void* out) {
    *(const char**)out = respool_last_error();
    return NULL;
}

static void last_error_is_per_thread(void) {
    CHECK_STATUS(respool_options_set_u32(NULL, RESPOOL_OPT_MIN, 1), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("NULL");
    const char* seen = NULL;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, last_error_of_a_fresh_thread, (void*)&seen) == 0);
    pthread_join(t, NULL);
    CHECK(seen != NULL && seen[0] == '\0');
    CHECK_ERROR_SAYS("NULL"); /* this thread's own text is still there */
}

/* Borrows and returns until a borrow check ran: a resource counts as idle past validate_after = 0
 * only once the pool's coarse clock (moved by its housekeeping every 10 ms) has ticked since its
 * release, so the first borrows may find it fresh. Bounded: 200 tries, 10 ms apart. */
static void borrow_until_checked(respool_pool* p, ctx* c) {
    for (int i = 0; i < 200 && c->validations + c->healthchecks == 0; ++i) {
        struct timespec pause = {0, 10000000};
        nanosleep(&pause, NULL);
        void* r = NULL;
        CHECK_STATUS(respool_acquire(p, &r, 1000), RESPOOL_OK);
        CHECK_STATUS(respool_release(p, r), RESPOOL_OK);
    }
}

static void hooks2_read_as_far_as_struct_size(void) {
    ctx x = {0};
    respool_pool* p = NULL;
    respool_hooks2 h = hooks_for(&x);
    h.struct_size = 4; /* does not reach create */
    CHECK_STATUS(respool_create2(NULL, &h, &p), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("struct_size");
    h = hooks_for(&x);
    h.create = NULL;
    CHECK_STATUS(respool_create2(NULL, &h, &p), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("create is required");

    /* A caller compiled before `validate` existed: its struct ends before it, and whatever lies
     * beyond (here a validate pointer the caller never meant to set) is not read. */
    respool_options* o = respool_options_new();
    respool_options_set_u32(o, RESPOOL_OPT_MIN, 1);
    respool_options_set_u32(o, RESPOOL_OPT_MAX, 1);
    respool_options_set_bool(o, RESPOOL_OPT_HEALTH_CHECK_ON_BORROW, true);
    respool_options_set_ms(o, RESPOOL_OPT_VALIDATE_AFTER_MS, 0);
    h = hooks_for(&x);
    h.healthcheck = healthcheck;
    h.validate = validate;
    h.struct_size = (uint32_t)offsetof(respool_hooks2, validate);
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_OK);
    borrow_until_checked(p, &x);
    CHECK(x.validations == 0 && x.healthchecks >= 1); /* validation fell back to the health check */
    respool_free(p);

    /* The full struct: validate runs on borrow, the health check does not. */
    ctx y = {0};
    h = hooks_for(&y);
    h.healthcheck = healthcheck;
    h.validate = validate;
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_OK);
    borrow_until_checked(p, &y);
    CHECK(y.validations >= 1 && y.healthchecks == 0);
    respool_free(p);
    respool_options_free(o);
    CHECK(x.created == x.destroyed && y.created == y.destroyed);
}

static void create_status_reaches_the_acquire(void) {
    ctx x = {0};
    respool_hooks2 h = hooks_for(&x);
    respool_pool* p = NULL;
    CHECK_STATUS(respool_create2(NULL, &h, &p), RESPOOL_OK); /* min 0: nothing created yet */
    x.create_status = 42;                                    /* e.g. "authentication failed" */
    void* r = NULL;
    CHECK_STATUS(respool_try_acquire(p, &r), 42);
    CHECK_STATUS(respool_acquire(p, &r, 1000), 42);
    x.create_status = -1000;
    CHECK_STATUS(respool_acquire(p, &r, 1000), -1000);
    x.create_status = 0;
    CHECK_STATUS(respool_acquire(p, &r, 1000), RESPOOL_OK);
    CHECK_STATUS(respool_release(p, r), RESPOOL_OK);
    CHECK_STATUS(respool_release(p, r), RESPOOL_E_INVALID); /* twice */
    CHECK_ERROR_SAYS("has not lent out");
    respool_free(p);

    /* The min pre-warm failing names it. */
    respool_options* o = respool_options_new();
    respool_options_set_u32(o, RESPOOL_OPT_MIN, 1);
    x.create_status = 7;
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_E_CREATE);
    CHECK_ERROR_SAYS("pre-warm");
    respool_options_free(o);
    CHECK(x.created == x.destroyed);
}

static void default_acquire_timeout(void) {
    ctx x = {0};
    respool_hooks2 h = hooks_for(&x);
    respool_options* o = respool_options_new();
    respool_options_set_u32(o, RESPOOL_OPT_MAX, 1);
    respool_options_set_ms(o, RESPOOL_OPT_ACQUIRE_TIMEOUT_MS, 50);
    respool_pool* p = NULL;
    CHECK_STATUS(respool_create2(o, &h, &p), RESPOOL_OK);
    respool_options_free(o);
    void *a = NULL, *b = NULL;
    CHECK_STATUS(respool_acquire(p, &a, 0), RESPOOL_OK);
    const double t0 = now_ms();
    CHECK_STATUS(respool_acquire(p, &b, 0), RESPOOL_E_TIMEOUT); /* timeout_ms 0: the pool's 50 ms */
    CHECK(now_ms() - t0 >= 49.0);
    CHECK_STATUS(respool_release(p, a), RESPOOL_OK);
    respool_free(p);
}

static void stats2_as_far_as_struct_size(void) {
    ctx x = {0};
    respool_hooks2 h = hooks_for(&x);
    respool_pool* p = NULL;
    CHECK_STATUS(respool_create2(NULL, &h, &p), RESPOOL_OK);
    void* r = NULL;
    for (int i = 0; i < 3; ++i) {
        CHECK_STATUS(respool_acquire(p, &r, 1000), RESPOOL_OK);
        CHECK_STATUS(respool_release(p, r), RESPOOL_OK);
    }
    CHECK_STATUS(respool_acquire(p, &r, 1000), RESPOOL_OK);
    CHECK_STATUS(respool_release_broken(p, r), RESPOOL_OK);
    respool_stats2 s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    CHECK_STATUS(respool_get_stats2(p, &s), RESPOOL_OK);
    CHECK(s.acquires == 4 && s.creations == 1 && s.poisoned == 1 && s.destructions == 1 && s.probes == 0);
    CHECK(s.circuit == RESPOOL_CIRCUIT_CLOSED && s.closed == 0 && s.max == 10);

    /* An older caller's shorter struct: the members it has, nothing written beyond. */
    unsigned char buf[sizeof(respool_stats2) + 16];
    memset(buf, 0xAB, sizeof buf);
    respool_stats2* old = (respool_stats2*)(void*)buf;
    old->struct_size = (uint32_t)offsetof(respool_stats2, acquires);
    CHECK_STATUS(respool_get_stats2(p, old), RESPOOL_OK);
    CHECK(old->struct_size == offsetof(respool_stats2, acquires) && old->max == 10);
    for (size_t i = offsetof(respool_stats2, acquires); i < sizeof buf; ++i) CHECK(buf[i] == 0xAB);
    old->struct_size = 0;
    CHECK_STATUS(respool_get_stats2(p, old), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("struct_size must be set to sizeof(respool_stats2)");
    old->struct_size = 3; /* does not even hold struct_size itself */
    unsigned char before[sizeof buf];
    memcpy(before, buf, sizeof buf);
    CHECK_STATUS(respool_get_stats2(p, old), RESPOOL_E_INVALID);
    CHECK(memcmp(before, buf, sizeof buf) == 0); /* nothing written */
    CHECK_STATUS(respool_get_stats2(NULL, &s), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("a NULL argument");
    CHECK_STATUS(respool_get_stats2(p, NULL), RESPOOL_E_INVALID);
    CHECK_ERROR_SAYS("a NULL argument");
    respool_close(p);
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    CHECK_STATUS(respool_get_stats2(p, &s), RESPOOL_OK);
    CHECK(s.closed == 1);
    respool_free(p);
}

static void table_has_the_v2_members(void) {
    const respool_api* api = respool_get_api();
    CHECK(api->abi_version == RESPOOL_ABI_VERSION && api->size == sizeof(respool_api));
    CHECK(RESPOOL_API_HAS(api, create2) && RESPOOL_API_HAS(api, get_stats2) &&
          RESPOOL_API_HAS(api, last_error));
    CHECK(api->create2 == respool_create2 && api->options_set_ms == respool_options_set_ms);
    respool_api v1_sized = *api;
    v1_sized.size = (uint32_t)offsetof(respool_api, last_error); /* what a v1 library reports */
    CHECK(!RESPOOL_API_HAS(&v1_sized, last_error) && RESPOOL_API_HAS(&v1_sized, status_string));
}

int main(void) {
    printf("respool %s, C ABI v2\n", RESPOOL_VERSION_STRING);
    options_by_id();
    options_new_free_and_create2_refusals();
    defaults_follow_what_was_set();
    last_error_is_per_thread();
    hooks2_read_as_far_as_struct_size();
    create_status_reaches_the_acquire();
    default_acquire_timeout();
    stats2_as_far_as_struct_size();
    table_has_the_v2_members();
    if (failures) {
        fprintf(stderr, "c_api_v2_test: %d checks failed\n", failures);
        return 1;
    }
    printf("c_api_v2_test: all checks passed\n");
    return 0;
}
