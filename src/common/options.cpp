// pool_options validation: every rule names the option and the value that broke it.
#include <respool/options.hpp>

#include <respool/detail/duration_text.hpp>

#include <stdexcept>
#include <string>

namespace respool {

pool_options resolve_defaults(pool_options o) {
    if (!o.max.is_set() && o.min > o.max) o.max = {by_default, o.min};
    if (!o.create_retry_max.is_set() && o.create_retry_max < o.create_retry_initial)
        o.create_retry_max = {by_default, o.create_retry_initial};
    if (!o.create_retry_initial.is_set() && o.create_retry_initial > o.create_retry_max)
        o.create_retry_initial = {by_default, o.create_retry_max};
    return o;
}

namespace {

void check(const pool_options& o) {
    constexpr std::size_t limit = 0x7fffffff;  // the core counts in 32 bits
    using detail::duration_text;
    auto fail = [](const std::string& m) { throw std::invalid_argument("respool: " + m); };
    if (o.max == 0) fail("max (0) must be at least 1");
    if (o.max > limit) fail("max (" + std::to_string(o.max) + ") must not exceed " + std::to_string(limit));
    if (o.min > o.max)
        fail("min (" + std::to_string(o.min) + ") must not exceed max (" + std::to_string(o.max) + ")");
    if (o.max_concurrent_creations == 0) fail("max_concurrent_creations (0) must be at least 1");
    if (o.max_concurrent_creations > limit) fail("max_concurrent_creations is too large");
    if (o.max_waiters > limit) fail("max_waiters (" + std::to_string(o.max_waiters) + ") is too large");
    if (o.healthcheck_interval < duration::zero())
        fail("healthcheck_interval (" + duration_text(o.healthcheck_interval) + ") must not be negative");
    if (o.acquire_timeout && *o.acquire_timeout < duration::zero())
        fail("acquire_timeout (" + duration_text(*o.acquire_timeout) + ") must not be negative");
    auto non_negative = [&](const char* name, duration d) {
        if (d < duration::zero())
            fail(std::string(name) + " (" + duration_text(d) + ") must not be negative");
    };
    non_negative("idle_ttl", o.idle_ttl);
    non_negative("max_lifetime", o.max_lifetime);
    non_negative("acquire_ttl", o.acquire_ttl);
    non_negative("validate_after", o.validate_after);
    non_negative("create_retry_initial", o.create_retry_initial);
    non_negative("create_retry_max", o.create_retry_max);
    auto positive = [&](const char* name, duration d) {
        if (d <= duration::zero()) fail(std::string(name) + " (" + duration_text(d) + ") must be positive");
    };
    positive("create_timeout", o.create_timeout);
    positive("check_timeout", o.check_timeout);
    positive("reset_timeout", o.reset_timeout);
    if (o.thread_affinity && !o.thread_safe)
        fail("thread_affinity requires thread_safe (a pool on one executor has no threads to tell apart)");
    if (o.create_retry_max < o.create_retry_initial)
        fail("create_retry_max (" + duration_text(o.create_retry_max) +
             ") must not be below create_retry_initial (" + duration_text(o.create_retry_initial) + ")");
}

}  // namespace

void validate(const pool_options& o) {
    check(resolve_defaults(o));
}

}  // namespace respool
