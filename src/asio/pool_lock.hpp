// The pool's lock in thread_safe mode.
#pragma once

#include <mutex>
#if defined(__GLIBC__)
#include <pthread.h>
#endif

namespace respool::detail {

// The pool's lock in thread_safe mode. On glibc an adaptive mutex: a contender spins briefly before
// it sleeps, so a critical section of a few dozen instructions rarely costs a futex round trip.
class pool_lock {
public:
#if defined(__GLIBC__)
    pool_lock() noexcept {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
        pthread_mutex_init(&m_, &a);
        pthread_mutexattr_destroy(&a);
    }
    ~pool_lock() {
        pthread_mutex_destroy(&m_);
    }
    void lock() noexcept {
        pthread_mutex_lock(&m_);
    }
    void unlock() noexcept {
        pthread_mutex_unlock(&m_);
    }

private:
    pthread_mutex_t m_;
#else
    void lock() noexcept {
        m_.lock();
    }
    void unlock() noexcept {
        m_.unlock();
    }

private:
    std::mutex m_;
#endif
public:
    pool_lock(const pool_lock&) = delete;
    pool_lock& operator=(const pool_lock&) = delete;
};

}  // namespace respool::detail
