// How a database pool (pg::pool, sqlite::pool) holds its state: behind a pointer (the public header
// names no private type), shared with the operations in flight, closed when the pool is destroyed or
// assigned over. A moved-from pool holds none. State has close() noexcept; it may be incomplete
// where the pool is declared, since the special members are defined next to it.
#pragma once

#include <memory>
#include <utility>

namespace respool::detail::db {

template <class State>
class state_handle {
public:
    explicit state_handle(std::shared_ptr<State> s) noexcept : s_(std::move(s)) {}
    ~state_handle() { close(); }
    state_handle(state_handle&&) noexcept = default;
    state_handle& operator=(state_handle&& o) noexcept {
        if (this != &o) {
            close();
            s_ = std::move(o.s_);
        }
        return *this;
    }

    void close() noexcept {
        if (s_) s_->close();
    }
    explicit operator bool() const noexcept { return s_ != nullptr; }
    State* operator->() const noexcept { return s_.get(); }
    State& operator*() const noexcept { return *s_; }
    // For the operations that keep the state alive while they run.
    [[nodiscard]] const std::shared_ptr<State>& shared() const noexcept { return s_; }

private:
    std::shared_ptr<State> s_;
};

}  // namespace respool::detail::db
