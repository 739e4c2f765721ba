// The execution context's service that closes its pools when it shuts down (context_service.hpp).

#include "context_service.hpp"

#include "driver_state.hpp"

#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/query.hpp>

#include <vector>

namespace respool::detail {

namespace {

class context_service final : public asio::execution_context::service {
public:
    static inline asio::execution_context::id id;

    explicit context_service(asio::execution_context& ctx)
        : asio::execution_context::service(ctx), pools_(std::make_shared<context_pools>()) {}
    [[nodiscard]] const std::shared_ptr<context_pools>& pools() const noexcept { return pools_; }

private:
    void shutdown() override { pools_->shutdown(); }

    std::shared_ptr<context_pools> pools_;
};

}  // namespace

std::shared_ptr<context_pools> pools_of(const asio::any_io_executor& ex) {
    asio::execution_context& ctx = asio::query(ex, asio::execution::context);
    return asio::use_service<context_service>(ctx).pools();
}

bool context_pools::join(pool_impl& p) noexcept {
    try {
        std::lock_guard<std::mutex> g(m_);
        if (shut_) return false;
        pools_.emplace(&p, p.weak_from_this());
        return true;
    } catch (...) {  // no memory to register: treat it as a context that cannot reach the pool
        return false;
    }
}

void context_pools::leave(pool_impl& p) noexcept {
    std::lock_guard<std::mutex> g(m_);
    pools_.erase(&p);
}

void context_pools::shutdown() noexcept {
    std::vector<std::shared_ptr<pool_impl>> alive;
    {
        std::lock_guard<std::mutex> g(m_);
        shut_ = true;
        try {
            alive.reserve(pools_.size());
        } catch (...) {  // no memory: the pools that do not fit are disarmed only (still safe)
        }
        for (auto& [p, weak] : pools_) {
            p->context_gone();  // a pool being destroyed is still whole: its leave() waits for m_
            if (auto strong = weak.lock()) {
                try {
                    alive.push_back(std::move(strong));
                } catch (...) {
                }
            }
        }
        pools_.clear();
    }
    // Hooks and observers may run here (destructors of idle resources, the drained event): outside the
    // lock, so they may destroy other pools of this context.
    for (auto& p : alive) p->close();
}

}  // namespace respool::detail
