// respool::basic_pool (include/respool/basic_pool.hpp): the driver behind the caller's synchronous
// basic_hooks (its members reach the driver through <respool/detail/pool_handle.hpp>, as pool<T>'s do).
#include <respool/basic_pool.hpp>

#include "asio/pool_impl.hpp"

#include <stdexcept>
#include <utility>

namespace respool::detail {

namespace {

std::optional<basic_check> basic_of(check_kind k) noexcept {
    switch (k) {
    case check_kind::validate: return basic_check::validate;
    case check_kind::before_acquire: return basic_check::before_acquire;
    case check_kind::healthcheck: return basic_check::healthcheck;
    case check_kind::before_release: return basic_check::before_release;
    case check_kind::needs_reset: return std::nullopt;  // every release runs before_release
    }
    return std::nullopt;
}

// The driver's hook interface over basic_hooks: synchronous factory and checks, no hook_context.
class basic_hooks_adapter final : public hooks_base {
public:
    explicit basic_hooks_adapter(std::unique_ptr<basic_hooks> h) : h_(std::move(h)) {}

    hook_mode factory_mode() const noexcept override { return hook_mode::sync; }
    hook_mode mode(check_kind k) const noexcept override {
        const auto c = basic_of(k);
        return c && h_->has(*c) ? hook_mode::sync : hook_mode::none;
    }
    bool wants_context() const noexcept override { return false; }
    resource_node* create_sync(error_code& ec, std::exception_ptr&) noexcept override {
        return h_->create(ec);
    }
    void create_async(const asio::any_io_executor&, asio::cancellation_slot, create_done done) override {
        done(errc::not_supported, nullptr, nullptr);  // never called: factory_mode() is sync
    }
    bool check_sync(check_kind k, resource_node& n, const hook_context&) noexcept override {
        const auto c = basic_of(k);
        return !c || h_->check(*c, n);
    }
    void check_async(check_kind, resource_node&, const hook_context&, const asio::any_io_executor&,
                     asio::cancellation_slot, check_done done) override {
        done(false);  // never called: every mode() is sync or none
    }
    bool destroy(resource_node* n) noexcept override { return h_->destroy(n); }

private:
    std::unique_ptr<basic_hooks> h_;
};

}  // namespace

inline namespace RESPOOL_ASIO_BUILD {
std::shared_ptr<pool_impl> make_basic_pool_impl(boost::asio::any_io_executor ex, const pool_options& opts,
                                                std::unique_ptr<basic_hooks> hooks) {
    if (!hooks) throw std::invalid_argument("respool: basic_pool needs hooks");
    return make_pool_impl(std::move(ex), opts, std::make_unique<basic_hooks_adapter>(std::move(hooks)));
}
}  // namespace RESPOOL_ASIO_BUILD

}  // namespace respool::detail
