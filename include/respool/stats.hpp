// A consistent snapshot of a pool. Contains no resource data and no credentials:
// safe to expose on a /metrics endpoint.
#pragma once

#include <array>
#include <bit>
#include <chrono>
#include <cstdint>

namespace respool {

enum class circuit_state { closed = 0, open = 1, half_open = 2 };
// "closed", "open", "half_open": the enumerator's name, as /health and the metrics' labels show it.
const char* to_string(circuit_state) noexcept;

// Fixed log-scale histogram of durations: bucket 0 counts < 1 us, bucket k (1..24) counts
// [2^(k-1), 2^k) us, bucket 25 counts >= 2^24 us (~16.8 s). Recording is a shift, an increment and an
// add; `sum` (all recorded durations) is Prometheus' `_sum`.
struct histogram {
    static constexpr std::size_t size = 26;
    std::array<std::uint64_t, size> counts{};
    std::chrono::nanoseconds sum{};

    static std::size_t bucket(std::chrono::nanoseconds d) noexcept {
        const auto us = static_cast<std::uint64_t>(d.count() < 0 ? 0 : d.count() / 1000);
        if (us == 0) return 0;
        const auto k = static_cast<std::size_t>(std::bit_width(us));
        return k < size - 1 ? k : size - 1;
    }
    // Exclusive upper bound of bucket k in microseconds (the last bucket is open).
    static std::uint64_t upper_us(std::size_t k) noexcept { return k == 0 ? 1 : std::uint64_t{1} << k; }
    void record(std::chrono::nanoseconds d) noexcept {
        ++counts[bucket(d)];
        if (d.count() > 0) sum += d;
    }
    [[nodiscard]] std::uint64_t total() const noexcept {
        std::uint64_t n = 0;
        for (auto c : counts) n += c;
        return n;
    }
    // Upper bound (us) of the bucket holding quantile q (0..1); 0 when empty.
    [[nodiscard]] std::uint64_t quantile_upper_us(double q) const noexcept {
        const std::uint64_t n = total();
        if (n == 0) return 0;
        const auto rank = static_cast<std::uint64_t>(q * static_cast<double>(n - 1)) + 1;
        std::uint64_t seen = 0;
        for (std::size_t k = 0; k < size; ++k)
            if ((seen += counts[k]) >= rank) return upper_us(k);
        return upper_us(size - 1);
    }
};

// The monotonic counters, defined once: the sans-io core counts into this struct and
// stats() hands out a copy. The first two are the ones every take writes (kept together, first).
struct pool_counters {
    std::uint64_t acquires = 0;         // leases handed out
    std::uint64_t immediate_takes = 0;  // of those, served without waiting
    std::uint64_t waits = 0;            // acquires that had to wait (once each, however often they parked)
    std::uint64_t timeouts = 0;
    std::uint64_t cancellations = 0;
    std::uint64_t creations = 0;        // successful factory calls
    std::uint64_t create_failures = 0;  // failed factory calls (errors, create_timeout)
    std::uint64_t destructions = 0;
    std::uint64_t poisoned = 0;
    std::uint64_t unavailable_rejections = 0;
    std::uint64_t exhausted_rejections = 0;  // max_waiters shedding
    std::uint64_t rejected = 0;              // before_acquire or validation on borrow said no
    std::uint64_t broken = 0;                // before_release said no
    std::uint64_t unhealthy = 0;             // health check said no
    std::uint64_t evicted = 0;               // idle longer than idle_ttl
    std::uint64_t retired = 0;               // older than max_lifetime
    std::uint64_t replaced = 0;              // made before retire_all(), destroyed when next idle
    std::uint64_t surplus = 0;               // beyond a lowered max (set_max), destroyed when next idle
    std::uint64_t leaks = 0;                 // leases reported held longer than acquire_ttl
    std::uint64_t creation_retries = 0;      // back-offs after failed creations
    std::uint64_t circuit_opened = 0;        // circuit state changes, by target state
    std::uint64_t circuit_half_opened = 0;
    std::uint64_t circuit_closed = 0;
    std::uint64_t probes = 0;  // acquires admitted while half-open
    bool operator==(const pool_counters&) const = default;
};

struct pool_stats : pool_counters {
    std::uint32_t idle = 0;     // created, ready to lend
    std::uint32_t active = 0;   // lent out, or inside a hook / factory / health check
    std::uint32_t total = 0;    // idle + active
    std::uint32_t waiting = 0;  // acquires parked (including woken ones not yet resumed)
    std::uint32_t max = 0;
    std::uint32_t reserved = 0;  // idle resources set aside for woken waiters
    std::uint32_t creating = 0;  // factory calls under way (counted in active)
    std::uint32_t min = 0;       // the floor of resources kept (pool_options::min)
    // With pool_options::record_timings (empty otherwise):
    histogram wait_time;    // acquire -> lease (immediate ones count in bucket 0)
    histogram hold_time;    // lease -> release
    histogram create_time;  // factory call -> resource, for the creations that succeeded
    circuit_state circuit = circuit_state::closed;
    bool closed = false;
};

}  // namespace respool
