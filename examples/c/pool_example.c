/* A complete C program using respool: a pool of "connections" shared by worker threads.
 * Build: cc -std=c11 $(pkg-config --cflags respool) pool_example.c $(pkg-config --libs respool) -lpthread */
#define _POSIX_C_SOURCE 200809L
#include <respool/respool.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct connection {
    int id;
    int queries;
} connection;

static int open_connection(void* ctx, void** out) {
    atomic_int* next_id = ctx; /* create may run on several threads at once */
    connection* c = malloc(sizeof *c);
    if (!c) return -1; /* any non-zero value: RESPOOL_E_CREATE reaches the waiter */
    c->id = atomic_fetch_add(next_id, 1) + 1;
    c->queries = 0;
    *out = c;
    return 0;
}

static void close_connection(void* ctx, void* resource) {
    (void)ctx;
    free(resource);
}

static bool still_good(void* ctx, void* resource) {
    (void)ctx;
    return ((connection*)resource)->queries < 100; /* false: the pool destroys it instead */
}

static void* worker(void* arg) {
    respool_pool* pool = arg;
    for (int i = 0; i < 50; ++i) {
        void* r = NULL;
        int st = respool_acquire(pool, &r, 1000); /* blocks this thread, FIFO, 1 s deadline */
        if (st != RESPOOL_OK) {
            fprintf(stderr, "acquire: %s\n", respool_status_string(st));
            return NULL;
        }
        ((connection*)r)->queries++; /* "run a query" */
        respool_release(pool, r);    /* back to the pool (before_release decides) */
    }
    return NULL;
}

int main(void) {
    static atomic_int next_id = 0;
    respool_hooks hooks = {0};
    hooks.ctx = &next_id;
    hooks.create = open_connection;
    hooks.destroy = close_connection;
    hooks.before_release = still_good;
    respool_config config = {.min = 2, .max = 4, .healthcheck_interval_ms = 0, .max_waiters = 0};

    respool_pool* pool = NULL;
    int st = respool_create(&config, &hooks, &pool);
    if (st != RESPOOL_OK) {
        fprintf(stderr, "respool_create: %s\n", respool_status_string(st));
        return 1;
    }
    pthread_t threads[8];
    for (int i = 0; i < 8; ++i) pthread_create(&threads[i], NULL, worker, pool);
    for (int i = 0; i < 8; ++i) pthread_join(threads[i], NULL);

    respool_stats s;
    respool_get_stats(pool, &s);
    printf("%llu acquires (%llu waited), %u connections, %llu created, %llu destroyed\n",
           (unsigned long long)s.acquires, (unsigned long long)s.waits, s.total,
           (unsigned long long)s.creations, (unsigned long long)s.destructions);
    respool_free(pool); /* closes and destroys the idle connections */
    return s.acquires == 400 && s.total <= 4 ? 0 : 1;
}
