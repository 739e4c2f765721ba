// Random operation sequences on the sans-io core, checked after every step against
//  (a) a small reference model written with plain containers (std::deque / std::vector, linear
//      scans, no intrusive lists, no ring, no deadline heap), which must predict every effect. It
//      follows the core rule for rule, so it is a differential test of the data structures, not an
//      independent judge of the rules; hence
//  (b) oracles in the harness, written from the documented rules (docs/01-concepts.md) and the harness's own
//  records, not from the core
//      or the model: each resource destroyed exactly once and never while a holder has it (lent, under
//      a borrow check, in a health check); total <= max (creations never exceed it; a lowered max drops
//      idle resources at once and returned ones while over it); a resource made before retire_all is
//      not kept when it comes back; every acquire completes exactly once; close leaves nothing; parked
//      waiters are handed places in arrival order (a waiter whose resource a check rejected goes back
//      to its arrival position) and a newcomer never takes a place while a waiter is parked; no
//      waiter stays parked while a place is idle and unreserved, or while capacity is free
//      and fewer creations run than the rules require; a timeout fires exactly when a
//      waiter's own deadline has come, whether it is parked, woken or waiting for a check's verdict;
//      before_acquire is due exactly for resources the harness saw lent before or made before the
//      borrower arrived (pre-warmed ones included), and only after validation; a verdict reaches the borrower
//      that still waits for it, and nobody once it left; `ready` is said exactly once, as soon as no creation
//      runs (or at the first failure, or close); `drained` exactly once, only after close and when nothing
//      the harness made is alive and no creation runs; the inline fast paths (take_fast, release_fast) apply
//      exactly when nothing needs the general path.
// Waiters get per-waiter deadlines: distinct (nanosecond resolution), shared, absolute, in the past,
// duration::max() and time_point::max(). Verdicts of borrow checks, creations (queue and synchronous),
// health checks and wake-ups are separate operations, so a deadline, a cancel, close, set_max and
// retire_all can come in between.
// The request queue (the FIFO the database layers' statements wait in) gets its own random sequences:
// push (with shared, distinct, absolute, past, huge and no deadlines), cancel, take, requeue, expire and
// fail_all, against a plain std::deque that is scanned linearly.
// RESPOOL_MODEL_OPS sets the number of operations (default 1,000,000); RESPOOL_MODEL_SEED replays a
// run. The seed is printed on failure. The model is in model.hpp, the harness in harness.hpp.
#include "harness.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

using namespace model_check;

namespace {

std::uint64_t env_u64(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

}  // namespace

TEST(model, random_operation_sequences_match_the_reference_model_and_keep_the_invariants) {
    const std::uint64_t total_ops = env_u64("RESPOOL_MODEL_OPS", 1'000'000);
    const std::uint64_t seed = env_u64("RESPOOL_MODEL_SEED", std::random_device{}());
    std::mt19937_64 meta(seed);
    std::uint64_t done = 0, runs = 0, acquires = 0, fast_takes = 0, fast_releases = 0, verdicts = 0,
                  orphaned = 0, rejections = 0, reparks = 0, sync_verdicts = 0;
    while (done < total_ops) {
        const std::uint64_t run_seed = meta();
        std::mt19937_64 pick(run_seed);
        config c;
        c.max = 1 + static_cast<std::uint32_t>(pick() % 6);
        c.min = static_cast<std::uint32_t>(pick() % (c.max + 1));
        c.max_concurrent_creations = 1 + static_cast<std::uint32_t>(pick() % 3);
        c.max_waiters = pick() % 3 == 0 ? 1 + static_cast<std::uint32_t>(pick() % 8) : 0;
        c.lifo = pick() % 2 == 0;
        c.before_acquire = pick() % 3 != 0;
        c.reports = pick() % 2 == 0;
        if (pick() % 2) c.idle_ttl = std::chrono::milliseconds(10 + pick() % 40);
        if (pick() % 2) c.acquire_ttl = std::chrono::milliseconds(10 + pick() % 40);
        if (pick() % 3 == 0) {
            c.validate_on_borrow = true;
            c.validate_after = std::chrono::milliseconds(pick() % 20);
        }
        if (pick() % 2) {
            c.retry_initial = std::chrono::milliseconds(1 + pick() % 5);
            c.retry_max = c.retry_initial * 8;
        }
        bool lifetimes = pick() % 2 == 0;
        if (pick() % 4 == 0) {  // a plain pool, where the driver's inline take and release apply
            c.before_acquire = c.reports = c.validate_on_borrow = lifetimes = false;
            c.idle_ttl = c.acquire_ttl = duration::zero();
        }
        c.lifetimes = lifetimes;
        run r(run_seed, c, lifetimes);
        const int len = 200 + static_cast<int>(pick() % 3000);
        std::string e;
        for (int i = 0; i < len && e.empty(); ++i) e = r.step(i);
        if (e.empty()) e = r.finish();
        ASSERT_EQ(e, "") << "seed " << seed << " (RESPOOL_MODEL_SEED=" << seed << "), run " << runs
                         << " (run seed " << run_seed << ", min " << c.min << " max " << c.max << " mcc "
                         << c.max_concurrent_creations << " max_waiters " << c.max_waiters << " lifo "
                         << c.lifo << " before_acquire " << c.before_acquire << " validate "
                         << c.validate_on_borrow << ")";
        done += static_cast<std::uint64_t>(len);
        acquires += r.acquires();
        fast_takes += r.fast_takes();
        fast_releases += r.fast_releases();
        verdicts += r.verdicts();
        orphaned += r.orphaned_verdicts();
        rejections += r.rejections();
        reparks += r.reparks();
        sync_verdicts += r.sync_verdicts();
        ++runs;
    }
    std::printf(
        "model: %llu operations in %llu runs, %llu leases handed out (%llu by take_fast, %llu "
        "returned by release_fast), %llu check verdicts (%llu of synchronous callers, %llu orphaned), %llu "
        "rejections (%llu re-parked a waiter), seed %llu\n",
        static_cast<unsigned long long>(done), static_cast<unsigned long long>(runs),
        static_cast<unsigned long long>(acquires), static_cast<unsigned long long>(fast_takes),
        static_cast<unsigned long long>(fast_releases), static_cast<unsigned long long>(verdicts),
        static_cast<unsigned long long>(sync_verdicts), static_cast<unsigned long long>(orphaned),
        static_cast<unsigned long long>(rejections), static_cast<unsigned long long>(reparks),
        static_cast<unsigned long long>(seed));
    EXPECT_GT(acquires, done / 50) << "the generator must actually exercise the pool";
    if (done >= 10'000) {
        EXPECT_GT(fast_takes, 0u) << "the generator must exercise take_fast";
        EXPECT_GT(fast_releases, 0u) << "the generator must exercise release_fast";
        EXPECT_GT(verdicts, 0u) << "the generator must exercise borrow checks";
        EXPECT_GT(orphaned, 0u) << "the generator must exercise verdicts whose borrower left";
        EXPECT_GT(sync_verdicts, 0u) << "the generator must exercise checks of synchronous callers";
        EXPECT_GT(reparks, 0u) << "the generator must exercise re-parks after a rejection";
    }
}

TEST(model, request_queue_operations_match_a_plain_deque) {
    const std::uint64_t total_ops = env_u64("RESPOOL_MODEL_OPS", 1'000'000) / 4;
    const std::uint64_t seed = env_u64("RESPOOL_MODEL_SEED", std::random_device{}());
    std::mt19937_64 meta(seed);
    std::uint64_t done = 0, runs = 0, pushes = 0, expired = 0, cancelled = 0, requeued = 0, refused = 0;
    while (done < total_ops) {
        const std::uint64_t run_seed = meta();
        std::mt19937_64 pick(run_seed);
        const std::size_t max_waiters = pick() % 3 == 0 ? 1 + pick() % 8 : 0;
        queue_run r(run_seed, max_waiters);
        const int len = 200 + static_cast<int>(pick() % 3000);
        std::string e;
        for (int i = 0; i < len && e.empty(); ++i) e = r.step(i);
        ASSERT_EQ(e, "") << "seed " << seed << " (RESPOOL_MODEL_SEED=" << seed << "), run " << runs
                         << " (run seed " << run_seed << ", max_waiters " << max_waiters << ")";
        done += static_cast<std::uint64_t>(len);
        pushes += r.pushes();
        expired += r.expired();
        cancelled += r.cancelled();
        requeued += r.requeued();
        refused += r.refused();
        ++runs;
    }
    std::printf(
        "request queue model: %llu operations in %llu runs, %llu pushes (%llu refused), %llu expired, "
        "%llu cancelled, %llu requeued, seed %llu\n",
        static_cast<unsigned long long>(done), static_cast<unsigned long long>(runs),
        static_cast<unsigned long long>(pushes), static_cast<unsigned long long>(refused),
        static_cast<unsigned long long>(expired), static_cast<unsigned long long>(cancelled),
        static_cast<unsigned long long>(requeued), static_cast<unsigned long long>(seed));
    if (done >= 10'000) {
        EXPECT_GT(expired, 0u) << "the generator must exercise expiry";
        EXPECT_GT(cancelled, 0u) << "the generator must exercise cancellation";
        EXPECT_GT(requeued, 0u) << "the generator must exercise requeue";
        EXPECT_GT(refused, 0u) << "the generator must exercise max_waiters";
    }
}
