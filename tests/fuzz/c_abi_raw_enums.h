/* c_abi_raw_enums.c: C ABI calls with their enum arguments as plain ints (values outside the enums). */
#ifndef RESPOOL_FUZZ_C_ABI_RAW_ENUMS_H
#define RESPOOL_FUZZ_C_ABI_RAW_ENUMS_H

#include <respool/respool.h>

#ifdef __cplusplus
extern "C" {
#endif

int fuzz_set_circuit_state_raw(respool_pool* pool, int state);
int fuzz_options_set_u32_raw(respool_options* options, int option, uint32_t value);
int fuzz_options_set_ms_raw(respool_options* options, int option, int64_t value_ms);
int fuzz_options_set_bool_raw(respool_options* options, int option, bool value);

#ifdef __cplusplus
}
#endif

#endif
