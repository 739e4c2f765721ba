/* A C program on the installed C library (respool::c): create a pool, borrow, return, free. */
#include <respool/respool.h>

#include <stdio.h>
#include <stdlib.h>

static int next_id = 0;

static int create(void* ctx, void** out) {
    (void)ctx;
    int* r = malloc(sizeof *r);
    if (!r) return RESPOOL_E_CREATE;
    *r = ++next_id;
    *out = r;
    return RESPOOL_OK;
}

static void destroy(void* ctx, void* r) {
    (void)ctx;
    free(r);
}

int main(void) {
    respool_hooks hooks = {0};
    hooks.create = create;
    hooks.destroy = destroy;
    respool_config config = {1, 2, 0, 0};
    respool_pool* pool = NULL;
    if (respool_create(&config, &hooks, &pool) != RESPOOL_OK) return 1;
    void* r = NULL;
    int st = respool_acquire(pool, &r, 1000);
    if (st != RESPOOL_OK) return 2;
    const int id = *(int*)r;
    st = respool_release(pool, r);
    respool_free(pool);
    printf("respool %s (C): borrowed resource %d\n", RESPOOL_VERSION_STRING, id);
    return st == RESPOOL_OK && id == 1 ? 0 : 3;
}
