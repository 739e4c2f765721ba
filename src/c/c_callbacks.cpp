// The user's C callbacks behind the pool's C++ interfaces: direct calls through the function pointers
// (no std::function), each marked as a callback of its pool (callback_scope).
#include "c_pool.hpp"

namespace respool::c_abi {

namespace {
// The codes a v2 pool's create callback returns, carried as errors to the acquire they fail.
class create_status_category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "respool.c_create"; }
    std::string message(int status) const override {
        return "the create callback failed with status " + std::to_string(status);
    }
};
const create_status_category& create_category() noexcept {
    static const create_status_category c;
    return c;
}
}  // namespace

error_code create_status_error(int status) noexcept {
    return {status, create_category()};
}

int status_of(const error_code& ec) noexcept {
    if (!ec) return RESPOOL_OK;
    if (ec.category() == create_category()) return ec.value();
    if (ec.category() == respool::category()) {
        switch (static_cast<errc>(ec.value())) {
        case errc::closed: return RESPOOL_E_CLOSED;
        case errc::timeout: return RESPOOL_E_TIMEOUT;
        case errc::cancelled: return RESPOOL_E_CANCELLED;
        case errc::unavailable: return RESPOOL_E_UNAVAILABLE;
        case errc::exhausted: return RESPOOL_E_EXHAUSTED;
        case errc::create_failed: return RESPOOL_E_CREATE;
        case errc::broken:
        case errc::poisoned: return RESPOOL_E_INVALID;  // never an acquire outcome
        case errc::not_supported: return RESPOOL_E_INTERNAL;
        case errc::hook_timeout: return RESPOOL_E_CREATE;  // C factories are synchronous: never seen
        }
    }
    return RESPOOL_E_INTERNAL;
}

namespace {

// The hooks of a C pool: direct calls through the function pointers.
class c_hooks final : public basic_hooks {
public:
    explicit c_hooks(respool_pool* p) : p_(p) {}

    bool has(basic_check c) const noexcept override { return pick(c) != nullptr; }
    basic_node* create(error_code& ec) noexcept override {
        void* r = nullptr;
        int rc;
        try {
            callback_scope in(p_);
            rc = p_->hooks.create(p_->hooks.ctx, &r);
        } catch (...) {
            rc = -1;
        }
        if (rc != 0 && p_->create_status_as_is) {  // v2: the caller's own code, as is
            ec = create_status_error(rc);
            return nullptr;
        }
        if (rc != 0 || r == nullptr) {
            ec = errc::create_failed;
            return nullptr;
        }
        c_node* node = nullptr;
        try {
            node = new c_node(c_resource{r, false});
            std::lock_guard<std::mutex> g(p_->mu);
            // A pointer that is already live would make release ambiguous: refuse it (and do not
            // call destroy on it: it belongs to the resource that is live).
            if (p_->live.emplace(r, node).second) return node;
        } catch (...) {
        }
        delete node;
        ec = errc::create_failed;
        return nullptr;
    }
    bool check(basic_check c, basic_node& n) noexcept override {
        try {
            callback_scope in(p_);
            return pick(c)(p_->hooks.ctx, static_cast<c_node&>(n).value.ptr);
        } catch (...) {
            return false;
        }
    }
    bool destroy(basic_node* n) noexcept override {
        auto* node = static_cast<c_node*>(n);
        void* r = node->value.ptr;
        bool ok = true;
        if (p_->hooks.destroy) {
            try {
                callback_scope in(p_);
                p_->hooks.destroy(p_->hooks.ctx, r);
            } catch (...) {
                ok = false;
            }
        }
        {
            std::lock_guard<std::mutex> g(p_->mu);
            p_->live.erase(r);
        }
        delete node;
        return ok;
    }

private:
    bool (*pick(basic_check c) const noexcept)(void*, void*) {
        switch (c) {
        case basic_check::validate:  // on borrow: validate, else the healthcheck
            return p_->hooks.validate ? p_->hooks.validate : p_->hooks.healthcheck;
        case basic_check::healthcheck: return p_->hooks.healthcheck;
        case basic_check::before_acquire: return p_->hooks.before_acquire;
        case basic_check::before_release: return p_->hooks.before_release;
        }
        return nullptr;
    }
    respool_pool* p_;
};

class c_strategy final : public respool::circuit_strategy {
public:
    c_strategy(const respool_circuit_strategy& s, respool_pool* p) : state_(s), p_(p) {}
    void report_success(respool::circuit_breaker&) override {
        callback_scope in(p_);
        if (state_.report_success) state_.report_success(state_.ctx, p_);
    }
    void report_failure(respool::circuit_breaker&, const error_code& ec) override {
        if (!state_.report_failure) return;
        int st = status_of(ec);
        if (ec.category() == create_category())
            st = RESPOOL_E_CREATE;  // the strategy hears respool's own codes
        else if (ec == errc::broken || ec == errc::poisoned)
            st = RESPOOL_E_INVALID;
        else if (st == RESPOOL_E_INTERNAL)
            st = RESPOOL_E_CREATE;  // a factory error of its own
        callback_scope in(p_);
        state_.report_failure(state_.ctx, p_, st);
    }

private:
    respool_circuit_strategy state_;
    respool_pool* p_;
};

}  // namespace

std::unique_ptr<basic_hooks> make_hooks(respool_pool* p) {
    return std::make_unique<c_hooks>(p);
}

std::shared_ptr<circuit_strategy> make_strategy(const respool_circuit_strategy& s, respool_pool* p) {
    return std::make_shared<c_strategy>(s, p);
}

}  // namespace respool::c_abi
