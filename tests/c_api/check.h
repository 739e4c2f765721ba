/* The checks of the C test programs: each failed check is printed with its place and counted in
 * `failures` (defined by the including program); the program exits non-zero when any failed. */
#ifndef RESPOOL_TESTS_C_API_CHECK_H
#define RESPOOL_TESTS_C_API_CHECK_H

#include <stdio.h>

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                              \
        }                                                                            \
    } while (0)
#define CHECK_STATUS(expr, want)                                                                      \
    do {                                                                                              \
        int got_ = (expr);                                                                            \
        if (got_ != (want)) {                                                                         \
            fprintf(stderr, "%s:%d: %s returned %d (%s), want %d\n", __FILE__, __LINE__, #expr, got_, \
                    respool_status_string(got_), (want));                                             \
            ++failures;                                                                               \
        }                                                                                             \
    } while (0)

#endif
