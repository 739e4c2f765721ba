// The offload pool's workers: pop, run, spin, sleep (the rules are in offload_pool.hpp).
#include "offload_pool.hpp"

#include "spin_pause.hpp"

namespace respool::sqlite::detail {

offload_pool::offload_pool(offload_settings s) : settings_(s), batches_(s.batch) {
    const std::size_t n = s.threads ? s.threads : 1;
    threads_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
}

offload_pool::~offload_pool() {
    {
        std::lock_guard lock(m_);
        stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    // Submitted between the last worker's exit and now: run here, then nothing is left behind.
    offload_job* rest = nullptr;
    {
        std::lock_guard lock(m_);
        stopped_.store(true, std::memory_order_relaxed);
        rest = head_;
        head_ = tail_ = nullptr;
        queued_.store(0, std::memory_order_relaxed);
    }
    while (rest) {
        offload_job* j = rest;
        rest = rest->next;
        j->run();
    }
}

void offload_pool::submit(offload_job* job) noexcept {
    job->next = nullptr;
    std::unique_lock lock(m_);
    if (stopped_.load(std::memory_order_relaxed)) {
        lock.unlock();
        job->run();
        return;
    }
    if (tail_)
        tail_->next = job;
    else
        head_ = job;
    tail_ = job;
    queued_.fetch_add(1, std::memory_order_release);
    // A spinning worker will take it; a wake already on its way will; otherwise wake a sleeper.
    const bool wake = sleepers_ > 0 && !wake_pending_ && spinners_.load(std::memory_order_relaxed) == 0;
    if (wake) wake_pending_ = true;
    lock.unlock();
    if (wake) cv_.notify_one();
}

offload_job* offload_pool::pop_locked() noexcept {
    offload_job* j = head_;
    if (!j) return nullptr;
    head_ = j->next;
    if (!head_) tail_ = nullptr;
    queued_.fetch_sub(1, std::memory_order_relaxed);
    return j;
}

bool offload_pool::spin() noexcept {
    if (settings_.spin_for <= std::chrono::nanoseconds::zero()) return false;
    std::size_t n = spinners_.load(std::memory_order_relaxed);
    do {
        if (n >= settings_.max_spinners) return false;
    } while (!spinners_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel));
    const bool seen =
        spin_until([this] { return queued_.load(std::memory_order_acquire) != 0; }, settings_.spin_for);
    // Before the lock: a producer that takes the lock after this sees no spinner and wakes a sleeper.
    spinners_.fetch_sub(1, std::memory_order_acq_rel);
    return seen;
}

void offload_pool::work() noexcept {
    std::unique_lock lock(m_);
    for (;;) {
        if (offload_job* j = pop_locked()) {
            // Jobs left behind and nobody idle to take them: wake the next worker (the chain).
            const bool wake =
                head_ && sleepers_ > 0 && !wake_pending_ && spinners_.load(std::memory_order_relaxed) == 0;
            if (wake) wake_pending_ = true;
            lock.unlock();
            if (wake) cv_.notify_one();
            j->run();
            lock.lock();
            continue;
        }
        if (stopping_) return;
        lock.unlock();
        const bool seen = spin();
        lock.lock();
        if (seen || head_) continue;
        if (stopping_) return;
        ++sleepers_;
        cv_.wait(lock, [this] { return wake_pending_ || stopping_; });
        --sleepers_;
        wake_pending_ = false;
    }
}

}  // namespace respool::sqlite::detail
