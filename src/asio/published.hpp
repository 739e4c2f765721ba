// A pool's strategy, observer or log sink: set under the pool's lock at any time, read without it by
// whoever runs the pool's effects, events and log lines. A reader loads the current object's address
// (one atomic load: nothing when none is set) and may be calling it when a setter replaces it, on
// another thread. So a replaced object is not destroyed: it is kept until the pool is destroyed. Setters
// are configuration calls (a handful in a pool's life), so what is kept stays small.
#pragma once

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

namespace respool::detail {

template <class T>
class published {
public:
    published() = default;
    published(const published&) = delete;
    published& operator=(const published&) = delete;

    // The current object, or nullptr. Lives at least as long as the pool.
    [[nodiscard]] T* get() const noexcept { return now_.load(std::memory_order_acquire); }
    explicit operator bool() const noexcept { return get() != nullptr; }

    // Under the pool's lock. The object it replaces stays alive (see above).
    void set(std::shared_ptr<T> next) {
        if (next == owner_) return;  // the same one again: nothing replaced, nothing to keep
        if (owner_) {
            kept_.reserve(kept_.size() + 1);  // may throw before anything changed
            kept_.push_back(std::move(owner_));
        }
        owner_ = std::move(next);
        now_.store(owner_.get(), std::memory_order_release);
    }

private:
    std::atomic<T*> now_{nullptr};
    std::shared_ptr<T> owner_;
    std::vector<std::shared_ptr<T>> kept_;  // replaced ones, still possibly in use by a reader
};

}  // namespace respool::detail
