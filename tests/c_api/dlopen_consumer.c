/* A consumer built against respool.h alone: no link-time dependency on librespool. It binds at run
 * time through dlopen/dlsym("respool_get_api") and uses the macros through its own table pointer. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static const struct respool_api* g_api;
#define RESPOOL_API g_api
#include <respool/respool.h>

static int next_token = 0;
static int make(void* ctx, void** out) {
    (void)ctx;
    *out = (void*)(size_t)(++next_token * 16); /* opaque non-NULL tokens */
    return 0;
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s /path/to/librespool.so\n", argv[0]);
        return 2;
    }
    void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    const respool_api* (*get_api)(void);
    *(void**)(&get_api) = dlsym(lib, "respool_get_api");
    if (!get_api) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 1;
    }
    g_api = get_api();
    if (g_api->abi_version != RESPOOL_ABI_VERSION || g_api->size < sizeof(respool_api)) {
        fprintf(stderr, "incompatible respool ABI %u (size %u)\n", g_api->abi_version, g_api->size);
        return 1;
    }
    respool_hooks hooks = {0};
    hooks.create = make;
    respool_config cfg = {1, 2, 0, 0};
    respool_pool* pool = NULL;
    int st = RESPOOL_NEW_POOL(&cfg, &hooks, &pool);
    void *a = NULL, *b = NULL, *c = NULL;
    if (st == RESPOOL_OK) st = RESPOOL_POOL_ACQUIRE(pool, &a, 100);
    if (st == RESPOOL_OK) st = RESPOOL_POOL_TRY_ACQUIRE(pool, &b);
    int exhausted = RESPOOL_POOL_TRY_ACQUIRE(pool, &c);
    if (st == RESPOOL_OK) st = RESPOOL_POOL_RELEASE(pool, a);
    if (st == RESPOOL_OK) st = RESPOOL_POOL_RELEASE(pool, b);
    int invalid = RESPOOL_POOL_RELEASE(pool, b);
    respool_stats s = {0};
    g_api->get_stats(pool, &s);
    if (st == RESPOOL_OK) st = RESPOOL_POOL_CLOSE(pool);
    g_api->free(pool);
    if (st != RESPOOL_OK || exhausted != RESPOOL_E_EXHAUSTED || invalid != RESPOOL_E_INVALID || s.idle != 2 ||
        s.acquires != 2) {
        fprintf(stderr, "dlopen consumer: status %s, exhausted %d, invalid %d, idle %u, acquires %llu\n",
                g_api->status_string(st), exhausted, invalid, s.idle, (unsigned long long)s.acquires);
        return 1;
    }
    printf("dlopen consumer: bound respool ABI %u through the table, all calls behaved\n",
           g_api->abi_version);
    dlclose(lib);
    return 0;
}
