// pool_stats as Prometheus metric families (respool/http/metrics.hpp; the list is in docs/08-http.md).
#include <respool/http/metrics.hpp>

#include "http/exposition.hpp"
#include "http/metric_families.hpp"

#include <respool/version.h>

#include <array>
#include <stdexcept>
#include <vector>

namespace respool::http {
namespace {

struct gauge {
    const char* name;
    const char* help;
    std::uint32_t pool_stats::*field;
};
constexpr std::array gauges{
    gauge{"respool_pool_resources_idle", "Resources created and ready to lend.", &pool_stats::idle},
    gauge{"respool_pool_resources_active", "Resources lent out, or inside a hook, factory or health check.",
          &pool_stats::active},
    gauge{"respool_pool_resources", "Resources that exist (idle + active).", &pool_stats::total},
    gauge{"respool_pool_resources_max", "The cap on resources (max).", &pool_stats::max},
    gauge{"respool_pool_resources_reserved", "Idle resources set aside for woken waiters.",
          &pool_stats::reserved},
    gauge{"respool_pool_resources_creating", "Creations under way (counted in active).",
          &pool_stats::creating},
    gauge{"respool_pool_waiters", "Acquires waiting for a resource.", &pool_stats::waiting},
    gauge{"respool_pool_resources_min", "The floor of resources the pool keeps (min).", &pool_stats::min},
};

struct counter {
    const char* name;
    const char* help;
    std::uint64_t pool_counters::*field;
};
// One per field of pool_counters, in its order.
constexpr std::array counters{
    counter{"respool_pool_acquires_total", "Leases handed out.", &pool_counters::acquires},
    counter{"respool_pool_immediate_takes_total", "Leases handed out without waiting.",
            &pool_counters::immediate_takes},
    counter{"respool_pool_waits_total", "Acquires that had to wait.", &pool_counters::waits},
    counter{"respool_pool_timeouts_total", "Acquires that failed at their deadline.",
            &pool_counters::timeouts},
    counter{"respool_pool_cancellations_total", "Acquires cancelled by their caller.",
            &pool_counters::cancellations},
    counter{"respool_pool_creations_total", "Resources created.", &pool_counters::creations},
    counter{"respool_pool_create_failures_total", "Failed creations (errors and create_timeout).",
            &pool_counters::create_failures},
    counter{"respool_pool_destructions_total", "Resources destroyed.", &pool_counters::destructions},
    counter{"respool_pool_poisoned_total", "Leases poisoned by their holder.", &pool_counters::poisoned},
    counter{"respool_pool_unavailable_rejections_total", "Acquires refused while the circuit was open.",
            &pool_counters::unavailable_rejections},
    counter{"respool_pool_exhausted_rejections_total", "Acquires refused because the waiter queue was full.",
            &pool_counters::exhausted_rejections},
    counter{"respool_pool_rejected_total", "Resources refused by before_acquire or validation on borrow.",
            &pool_counters::rejected},
    counter{"respool_pool_broken_total", "Resources before_release found broken.", &pool_counters::broken},
    counter{"respool_pool_unhealthy_total", "Resources that failed a background health check.",
            &pool_counters::unhealthy},
    counter{"respool_pool_evicted_total", "Resources closed after idle_ttl.", &pool_counters::evicted},
    counter{"respool_pool_retired_total", "Resources closed after max_lifetime.", &pool_counters::retired},
    counter{"respool_pool_replaced_total", "Resources closed after retire_all.", &pool_counters::replaced},
    counter{"respool_pool_surplus_total", "Resources closed beyond a lowered max.", &pool_counters::surplus},
    counter{"respool_pool_leaks_total", "Leases reported held longer than acquire_ttl.",
            &pool_counters::leaks},
    counter{"respool_pool_creation_retries_total", "Back-offs after failed creations.",
            &pool_counters::creation_retries},
    counter{"respool_pool_circuit_opened_total", "Times the circuit breaker opened.",
            &pool_counters::circuit_opened},
    counter{"respool_pool_circuit_half_opened_total", "Times the circuit breaker went half-open.",
            &pool_counters::circuit_half_opened},
    counter{"respool_pool_circuit_closed_total", "Times the circuit breaker closed.",
            &pool_counters::circuit_closed},
    counter{"respool_pool_probes_total", "Acquires admitted while the circuit was half-open.",
            &pool_counters::probes},
};
// A counter added to pool_counters must be added above (and to docs/08-http.md).
static_assert(sizeof(pool_counters) == counters.size() * sizeof(std::uint64_t));

constexpr std::array<circuit_state, 3> circuit_states{circuit_state::closed, circuit_state::open,
                                                      circuit_state::half_open};

struct timing {
    const char* name;
    const char* help;
    histogram pool_stats::*field;
};
constexpr std::array timings{
    timing{"respool_pool_acquire_wait_seconds", "Time from acquire to lease (with record_timings).",
           &pool_stats::wait_time},
    timing{"respool_pool_hold_seconds", "Time from lease to release (with record_timings).",
           &pool_stats::hold_time},
    timing{"respool_pool_create_seconds",
           "Time the factory took to create a resource, for successful creations (with record_timings).",
           &pool_stats::create_time},
};

std::vector<label> with(std::vector<label> labels, const char* name, std::string value) {
    labels.push_back({name, std::move(value)});
    return labels;
}

}  // namespace

namespace detail {

std::vector<family> pool_families(std::span<const pool_sample> pools,
                                  const std::vector<std::uint64_t>& bounds) {
    std::vector<family> out;
    if (pools.empty()) return out;
    for (const auto& p : pools) {  // checked before anything is built
        for (const auto& l : p.labels)
            if (l.name == "state" || l.name == "le")
                throw std::invalid_argument(
                    "respool::http: label '" + l.name +
                    "' is the pool metrics' own (respool_pool_circuit_state, buckets)");
        (void)label_text(p.labels);  // names checked
    }
    auto add = [&](const char* name, const char* help, family_type type, auto&& each) {
        family f{name, help, type, {}};
        f.samples.reserve(pools.size());
        for (const auto& p : pools) each(f, p);
        out.push_back(std::move(f));
    };

    for (const auto& g : gauges)
        add(g.name, g.help, family_type::gauge, [&](family& f, const pool_sample& p) {
            f.samples.push_back({p.labels, p.stats.*g.field, {}});
        });
    // One-hot by state (Prometheus' way to expose an enumeration): exactly one of the three is 1.
    add("respool_pool_circuit_state", "Circuit breaker state: 1 for the current state, 0 for the others.",
        family_type::gauge, [&](family& f, const pool_sample& p) {
            for (const circuit_state state : circuit_states)
                f.samples.push_back(
                    {with(p.labels, "state", to_string(state)), p.stats.circuit == state ? 1u : 0u, {}});
        });
    add("respool_pool_closed", "1 once the pool is closed, else 0.", family_type::gauge,
        [&](family& f, const pool_sample& p) {
            f.samples.push_back({p.labels, p.stats.closed ? 1u : 0u, {}});
        });
    for (const auto& c : counters)
        add(c.name, c.help, family_type::counter, [&](family& f, const pool_sample& p) {
            f.samples.push_back({p.labels, p.stats.*c.field, {}});
        });
    for (const auto& t : timings)
        add(t.name, t.help, family_type::histogram, [&](family& f, const pool_sample& p) {
            f.samples.push_back({p.labels, 0, at_bounds(p.stats.*t.field, bounds)});
        });
    return out;
}

family build_info_family() {
    return {"respool_build_info",
            "respool's version: 1, labelled with the version.",
            family_type::gauge,
            {{{{"version", RESPOOL_VERSION_STRING}}, 1, {}}}};
}

}  // namespace detail

void write_pool_metrics(std::string& out, std::span<const pool_sample> pools,
                        const metrics_options& options) {
    const auto bounds = detail::bounds_us(options);
    detail::append_families(out, detail::pool_families(pools, bounds), bounds);
}

void write_build_info(std::string& out) {
    detail::append_families(out, {detail::build_info_family()}, {});
}

}  // namespace respool::http
