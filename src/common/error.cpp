#include <respool/error.hpp>

#include <string>

namespace respool {
namespace {

class category_impl final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "respool"; }
    std::string message(int ev) const override {
        switch (static_cast<errc>(ev)) {
        case errc::closed: return "pool is closed";
        case errc::timeout: return "timed out waiting for a resource";
        case errc::cancelled: return "acquire cancelled";
        case errc::unavailable: return "circuit breaker is open";
        case errc::exhausted: return "pool exhausted";
        case errc::create_failed: return "resource creation failed";
        case errc::broken: return "resource reported broken on release";
        case errc::poisoned: return "resource poisoned by its holder";
        case errc::not_supported: return "operation not supported by this pool's hooks";
        case errc::hook_timeout: return "a pool hook did not finish within its timeout";
        }
        return "unknown respool error " + std::to_string(ev);
    }
};

}  // namespace

const boost::system::error_category& category() noexcept {
    static const category_impl instance;
    return instance;
}

}  // namespace respool
