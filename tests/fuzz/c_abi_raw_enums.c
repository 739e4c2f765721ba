/* The enum arguments of the C ABI as a C caller may pass them: any int. In C an enum is an int and
 * (respool_option)999 is a value; in C++ (the fuzzer) such a value would be undefined before the call. */
#include "c_abi_raw_enums.h"

int fuzz_set_circuit_state_raw(respool_pool* pool, int state) {
    return respool_set_circuit_state(pool, (respool_circuit_state)state);
}

int fuzz_options_set_u32_raw(respool_options* options, int option, uint32_t value) {
    return respool_options_set_u32(options, (respool_option)option, value);
}

int fuzz_options_set_ms_raw(respool_options* options, int option, int64_t value_ms) {
    return respool_options_set_ms(options, (respool_option)option, value_ms);
}

int fuzz_options_set_bool_raw(respool_options* options, int option, bool value) {
    return respool_options_set_bool(options, (respool_option)option, value);
}
