// The baseline a C++ developer hand-rolls: std::mutex + std::deque + std::condition_variable. Written
// here for the comparison only (no timeouts, no health, no fairness guarantees).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

template <class T>
class naive_pool {
public:
    naive_pool(std::size_t size, const std::function<T()>& make) {
        for (std::size_t i = 0; i < size; ++i) {
            owned_.push_back(std::make_unique<T>(make()));
            idle_.push_back(owned_.back().get());
        }
    }
    T* acquire() {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return !idle_.empty(); });
        T* r = idle_.front();
        idle_.pop_front();
        return r;
    }
    void release(T* r) {
        {
            std::lock_guard<std::mutex> g(m_);
            idle_.push_back(r);
        }
        cv_.notify_one();
    }

private:
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<T*> idle_;
    std::vector<std::unique_ptr<T>> owned_;
};
