// pool_stats as Prometheus metric families (respool/http/metrics.hpp; the list is in docs/08-http.md).
#include <respool/http/metrics.hpp>

#include "http/exposition.hpp"

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

}  // namespace

void write_pool_metrics(std::string& out, std::span<const pool_sample> pools) {
    if (pools.empty()) return;
    std::vector<std::string> labels;  // checked before anything is written
    labels.reserve(pools.size());
    for (const auto& p : pools) {
        for (const auto& l : p.labels)
            if (l.name == "state" || l.name == "le")
                throw std::invalid_argument(
                    "respool::http: label '" + l.name +
                    "' is the pool metrics' own (respool_pool_circuit_state, buckets)");
        labels.push_back(detail::label_text(p.labels));
    }

    for (const auto& g : gauges) {
        detail::append_family(out, g.name, "gauge", g.help);
        for (std::size_t i = 0; i < pools.size(); ++i)
            detail::append_sample(out, g.name, labels[i], pools[i].stats.*g.field);
    }
    // One-hot by state (Prometheus' way to expose an enumeration): exactly one of the three is 1.
    detail::append_family(out, "respool_pool_circuit_state", "gauge",
                          "Circuit breaker state: 1 for the current state, 0 for the others.");
    for (std::size_t i = 0; i < pools.size(); ++i) {
        for (const circuit_state state : circuit_states) {
            std::string l = labels[i];
            detail::append_label(l, "state", to_string(state));
            detail::append_sample(out, "respool_pool_circuit_state", l,
                                  pools[i].stats.circuit == state ? 1 : 0);
        }
    }
    detail::append_family(out, "respool_pool_closed", "gauge", "1 once the pool is closed, else 0.");
    for (std::size_t i = 0; i < pools.size(); ++i)
        detail::append_sample(out, "respool_pool_closed", labels[i], pools[i].stats.closed ? 1 : 0);

    for (const auto& c : counters) {
        detail::append_family(out, c.name, "counter", c.help);
        for (std::size_t i = 0; i < pools.size(); ++i)
            detail::append_sample(out, c.name, labels[i], pools[i].stats.*c.field);
    }

    detail::append_family(out, "respool_pool_acquire_wait_seconds", "histogram",
                          "Time from acquire to lease (with record_timings).");
    for (std::size_t i = 0; i < pools.size(); ++i)
        detail::append_histogram(out, "respool_pool_acquire_wait_seconds", labels[i],
                                 pools[i].stats.wait_time);
    detail::append_family(out, "respool_pool_hold_seconds", "histogram",
                          "Time from lease to release (with record_timings).");
    for (std::size_t i = 0; i < pools.size(); ++i)
        detail::append_histogram(out, "respool_pool_hold_seconds", labels[i], pools[i].stats.hold_time);
}

}  // namespace respool::http
