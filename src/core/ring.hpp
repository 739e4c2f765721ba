// Idle store: a ring buffer of pointers with O(1) push/pop at both ends. Capacity is a power of two so
// the index wrap is a mask; it doubles when full (the only time elements move) and never shrinks.
// Indexes are 32-bit (the pool's max is below 2^31): the whole header is 20 bytes, so it shares a
// cache line with the rest of the core's hot fields.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace respool::core {

template <class T>
class ring {
public:
    explicit ring(std::size_t min_capacity = 8) {
        std::size_t cap = 8;
        while (cap < min_capacity) cap <<= 1;
        assert(cap <= (std::size_t{1} << 31));
        buf_ = std::make_unique<T[]>(cap);
        mask_ = static_cast<std::uint32_t>(cap - 1);
    }

    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] bool empty() const noexcept { return size_ == 0; }
    [[nodiscard]] std::size_t capacity() const noexcept { return std::size_t{mask_} + 1; }

    void push_back(T v) {
        if (size_ == capacity()) grow();
        buf_[(head_ + size_) & mask_] = v;
        ++size_;
    }
    void push_front(T v) {
        if (size_ == capacity()) grow();
        head_ = (head_ - 1) & mask_;
        buf_[head_] = v;
        ++size_;
    }
    T pop_front() noexcept {
        assert(size_ > 0);
        T v = buf_[head_];
        head_ = (head_ + 1) & mask_;
        --size_;
        return v;
    }
    T pop_back() noexcept {
        assert(size_ > 0);
        --size_;
        return buf_[(head_ + size_) & mask_];
    }
    [[nodiscard]] T front() const noexcept {
        assert(size_ > 0);
        return buf_[head_];
    }
    [[nodiscard]] T back() const noexcept {
        assert(size_ > 0);
        return buf_[(head_ + size_ - 1) & mask_];
    }
    // i-th element in idle order (0 = front).
    [[nodiscard]] T at(std::size_t i) const noexcept {
        assert(i < size_);
        return buf_[(head_ + static_cast<std::uint32_t>(i)) & mask_];
    }

private:
    void grow() {
        const std::size_t cap = capacity();
        assert(cap * 2 <= (std::size_t{1} << 31));
        auto bigger = std::make_unique<T[]>(cap * 2);
        for (std::uint32_t i = 0; i < size_; ++i) bigger[i] = buf_[(head_ + i) & mask_];
        buf_ = std::move(bigger);
        head_ = 0;
        mask_ = static_cast<std::uint32_t>(cap * 2 - 1);
    }

    std::unique_ptr<T[]> buf_;
    std::uint32_t head_ = 0;
    std::uint32_t size_ = 0;
    std::uint32_t mask_ = 0;
};

}  // namespace respool::core
