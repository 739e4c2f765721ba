// respool_options: every pool option reachable from C by id (respool.h, v2). Each id has one type and
// one setter; a wrong type, an unknown id or a value no pool can take is refused with a message
// (respool_last_error) that names the option. Whole-pool rules (min <= max, ...) are checked by
// respool_create2 through respool::validate, whose message also names the options.
#include "c_pool.hpp"

#include <new>
#include <string>

using respool::c_abi::fail;

namespace {

enum class kind { u32, ms, boolean };

struct option_info {
    respool_option id;
    const char* name;
    kind type;
};

constexpr option_info options_table[] = {
    {RESPOOL_OPT_MIN, "RESPOOL_OPT_MIN", kind::u32},
    {RESPOOL_OPT_MAX, "RESPOOL_OPT_MAX", kind::u32},
    {RESPOOL_OPT_MAX_WAITERS, "RESPOOL_OPT_MAX_WAITERS", kind::u32},
    {RESPOOL_OPT_MAX_CONCURRENT_CREATIONS, "RESPOOL_OPT_MAX_CONCURRENT_CREATIONS", kind::u32},
    {RESPOOL_OPT_IDLE_ORDER, "RESPOOL_OPT_IDLE_ORDER", kind::u32},
    {RESPOOL_OPT_ACQUIRE_TIMEOUT_MS, "RESPOOL_OPT_ACQUIRE_TIMEOUT_MS", kind::ms},
    {RESPOOL_OPT_HEALTHCHECK_INTERVAL_MS, "RESPOOL_OPT_HEALTHCHECK_INTERVAL_MS", kind::ms},
    {RESPOOL_OPT_IDLE_TTL_MS, "RESPOOL_OPT_IDLE_TTL_MS", kind::ms},
    {RESPOOL_OPT_MAX_LIFETIME_MS, "RESPOOL_OPT_MAX_LIFETIME_MS", kind::ms},
    {RESPOOL_OPT_ACQUIRE_TTL_MS, "RESPOOL_OPT_ACQUIRE_TTL_MS", kind::ms},
    {RESPOOL_OPT_VALIDATE_AFTER_MS, "RESPOOL_OPT_VALIDATE_AFTER_MS", kind::ms},
    {RESPOOL_OPT_CREATE_RETRY_INITIAL_MS, "RESPOOL_OPT_CREATE_RETRY_INITIAL_MS", kind::ms},
    {RESPOOL_OPT_CREATE_RETRY_MAX_MS, "RESPOOL_OPT_CREATE_RETRY_MAX_MS", kind::ms},
    {RESPOOL_OPT_CREATE_TIMEOUT_MS, "RESPOOL_OPT_CREATE_TIMEOUT_MS", kind::ms},
    {RESPOOL_OPT_CHECK_TIMEOUT_MS, "RESPOOL_OPT_CHECK_TIMEOUT_MS", kind::ms},
    {RESPOOL_OPT_RESET_TIMEOUT_MS, "RESPOOL_OPT_RESET_TIMEOUT_MS", kind::ms},
    {RESPOOL_OPT_HEALTH_CHECK_ON_BORROW, "RESPOOL_OPT_HEALTH_CHECK_ON_BORROW", kind::boolean},
    {RESPOOL_OPT_THREAD_AFFINITY, "RESPOOL_OPT_THREAD_AFFINITY", kind::boolean},
    {RESPOOL_OPT_RECORD_TIMINGS, "RESPOOL_OPT_RECORD_TIMINGS", kind::boolean},
};

const char* setter_of(kind k) noexcept {
    switch (k) {
    case kind::u32: return "respool_options_set_u32";
    case kind::ms: return "respool_options_set_ms";
    case kind::boolean: return "respool_options_set_bool";
    }
    return "?";
}

// The option's entry when `id` exists and takes `type`; otherwise nullptr, with the reason set.
// `id` is the caller's value as an integer (respool::c_abi::raw_enum): an unknown one is no enum value.
const option_info* find(respool_options* o, std::underlying_type_t<respool_option> id, kind type) noexcept {
    if (!o) {
        fail(RESPOOL_E_INVALID, "respool_options is NULL");
        return nullptr;
    }
    for (const auto& e : options_table) {
        if (static_cast<std::underlying_type_t<respool_option>>(e.id) != id) continue;
        if (e.type == type) {
            respool::c_abi::clear_last_error();
            return &e;
        }
        try {
            fail(RESPOOL_E_INVALID, std::string(e.name) + " takes " + setter_of(e.type));
        } catch (...) {
            fail(RESPOOL_E_INVALID, "option of another type");
        }
        return nullptr;
    }
    try {
        fail(RESPOOL_E_INVALID, "unknown respool_option " + std::to_string(id));
    } catch (...) {
        fail(RESPOOL_E_INVALID, "unknown respool_option");
    }
    return nullptr;
}

}  // namespace

extern "C" {

respool_options* respool_options_new(void) {
    respool::c_abi::clear_last_error();
    auto* o = new (std::nothrow) respool_options{};
    if (!o) fail(RESPOOL_E_INTERNAL, "out of memory");
    return o;
}

void respool_options_free(respool_options* options) {
    delete options;
}

int respool_options_set_u32(respool_options* options, respool_option option, uint32_t value) {
    if (!find(options, respool::c_abi::raw_enum(option), kind::u32)) return RESPOOL_E_INVALID;
    respool::pool_options& o = options->o;
    switch (option) {
    case RESPOOL_OPT_MIN: o.min = value; break;
    case RESPOOL_OPT_MAX: o.max = value; break;
    case RESPOOL_OPT_MAX_WAITERS: o.max_waiters = value; break;
    case RESPOOL_OPT_MAX_CONCURRENT_CREATIONS: o.max_concurrent_creations = value; break;
    case RESPOOL_OPT_IDLE_ORDER:
        if (value != RESPOOL_IDLE_FIFO && value != RESPOOL_IDLE_LIFO) {
            try {
                return fail(RESPOOL_E_INVALID,
                            "RESPOOL_OPT_IDLE_ORDER (" + std::to_string(value) +
                                ") must be RESPOOL_IDLE_FIFO (0) or RESPOOL_IDLE_LIFO (1)");
            } catch (...) {
                return fail(RESPOOL_E_INVALID, "RESPOOL_OPT_IDLE_ORDER must be 0 or 1");
            }
        }
        o.order = value == RESPOOL_IDLE_LIFO ? respool::idle_order::lifo : respool::idle_order::fifo;
        break;
    default: return RESPOOL_E_INTERNAL;  // the table and this switch disagree
    }
    return RESPOOL_OK;
}

int respool_options_set_ms(respool_options* options, respool_option option, int64_t value_ms) {
    const option_info* e = find(options, respool::c_abi::raw_enum(option), kind::ms);
    if (!e) return RESPOOL_E_INVALID;
    respool::pool_options& o = options->o;
    if (option == RESPOOL_OPT_ACQUIRE_TIMEOUT_MS && value_ms < 0) {  // none: wait forever
        o.acquire_timeout.reset();
        return RESPOOL_OK;
    }
    if (value_ms < 0) {
        try {
            return fail(RESPOOL_E_INVALID,
                        std::string(e->name) + " (" + std::to_string(value_ms) + ") must not be negative");
        } catch (...) {
            return fail(RESPOOL_E_INVALID, "a duration must not be negative");
        }
    }
    const respool::duration d = respool::c_abi::duration_of_ms(value_ms);
    switch (option) {
    case RESPOOL_OPT_ACQUIRE_TIMEOUT_MS: o.acquire_timeout = d; break;
    case RESPOOL_OPT_HEALTHCHECK_INTERVAL_MS: o.healthcheck_interval = d; break;
    case RESPOOL_OPT_IDLE_TTL_MS: o.idle_ttl = d; break;
    case RESPOOL_OPT_MAX_LIFETIME_MS: o.max_lifetime = d; break;
    case RESPOOL_OPT_ACQUIRE_TTL_MS: o.acquire_ttl = d; break;
    case RESPOOL_OPT_VALIDATE_AFTER_MS: o.validate_after = d; break;
    case RESPOOL_OPT_CREATE_RETRY_INITIAL_MS: o.create_retry_initial = d; break;
    case RESPOOL_OPT_CREATE_RETRY_MAX_MS: o.create_retry_max = d; break;
    case RESPOOL_OPT_CREATE_TIMEOUT_MS: o.create_timeout = d; break;
    case RESPOOL_OPT_CHECK_TIMEOUT_MS: o.check_timeout = d; break;
    case RESPOOL_OPT_RESET_TIMEOUT_MS: o.reset_timeout = d; break;
    default: return RESPOOL_E_INTERNAL;
    }
    return RESPOOL_OK;
}

int respool_options_set_bool(respool_options* options, respool_option option, bool value) {
    if (!find(options, respool::c_abi::raw_enum(option), kind::boolean)) return RESPOOL_E_INVALID;
    respool::pool_options& o = options->o;
    switch (option) {
    case RESPOOL_OPT_HEALTH_CHECK_ON_BORROW: o.health_check_on_borrow = value; break;
    case RESPOOL_OPT_THREAD_AFFINITY: o.thread_affinity = value; break;
    case RESPOOL_OPT_RECORD_TIMINGS: o.record_timings = value; break;
    default: return RESPOOL_E_INTERNAL;
    }
    return RESPOOL_OK;
}

}  // extern "C"
