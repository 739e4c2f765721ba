// Creation: coroutine and synchronous factories, stamping, readiness of the pre-warm, inline creation.

#include "driver_state.hpp"

namespace respool::detail {

namespace {
// One coroutine creation's completion, shared by the copies of its handler. When the last copy dies
// without having run (the io_context was torn down under the suspended factory), the creation is
// settled as abandoned, so its slot does not stay counted and keep the pool alive for ever.
class pending_creation {
public:
    pending_creation(std::shared_ptr<pool_impl> p, std::shared_ptr<hook_run> run) noexcept
        : p_(std::move(p)), run_(std::move(run)) {}
    pending_creation(const pending_creation&) = delete;
    pending_creation& operator=(const pending_creation&) = delete;
    ~pending_creation() {
        if (p_) p_->creation_abandoned(run_);
    }
    void finish(error_code ec, std::exception_ptr error, resource_node* n) {
        const auto p = std::move(p_);
        p->creation_done(run_, ec, std::move(error), n);
    }

private:
    std::shared_ptr<pool_impl> p_;
    std::shared_ptr<hook_run> run_;
};
}  // namespace

// ---- creation --------------------------------------------------------------------------------

void pool_impl::start_creations(int n) noexcept {
    if (factory_ == hook_mode::async) {
        for (int i = 0; i < n; ++i) {
            try {
                std::shared_ptr<hook_run> run;
                {
                    guard g(*state_);
                    run = begin_run_locked(run_kind::create, nullptr, opts_.create_timeout);
                    run->started = creation_start();
                }
                auto pending = std::make_shared<pending_creation>(shared_from_this(), run);
                hooks_->create_async(executor, run->signal.slot(),
                                     [pending](error_code ec, std::exception_ptr error, resource_node* node) {
                                         pending->finish(ec, std::move(error), node);
                                     });
            } catch (...) {
                const int more = settle_creation(errc::create_failed, nullptr);
                if (more) start_creations(more);
            }
        }
        return;
    }
    // Synchronous factory: run the creations here, iteratively (a long pre-warm does not recurse).
    while (n-- > 0) {
        error_code ec;
        std::exception_ptr error;
        const auto started = creation_start();
        resource_node* node = hooks_->create_sync(ec, error);
        n += settle_creation(ec, node, error, started);
    }
}

void pool_impl::creation_abandoned(const std::shared_ptr<hook_run>& run) noexcept {
    creation_done(run, errc::closed, nullptr, nullptr);
}

void pool_impl::creation_done(const std::shared_ptr<hook_run>& run, error_code ec, std::exception_ptr error,
                              resource_node* node) noexcept {
    bool live;
    {
        guard g(*state_);
        live = end_run_locked(*run);
    }
    if (!live) {  // past create_timeout (or closed): its slot was freed then; the late resource goes
        if (node && !hooks_->destroy(node)) log(log_level::warning, "destructor hook failed (late creation)");
        return;
    }
    const int more = settle_creation(ec, node, error, run->started);
    if (more) start_creations(more);
    release_self_if_drained();
}

// A node fresh from the factory: the core's part is constructed here, before the core ever sees it.
void pool_impl::stamp_new(resource_node* n) noexcept {
    core::resource* r = new (n->core_part) core::resource{};
    r->created_at = now();
    if (opts_.max_lifetime > duration::zero()) {
        std::uniform_real_distribution<double> jitter(0.0, 0.025);  // up to 2.5 % earlier
        guard g(*state_);
        const auto life = opts_.max_lifetime -
                          std::chrono::duration_cast<duration>(opts_.max_lifetime * jitter(state_->rng));
        r->expires_at = core::deadline_after(r->created_at, life);
    }
}

std::chrono::steady_clock::time_point pool_impl::creation_start() const noexcept {
    return opts_.record_timings ? now() : std::chrono::steady_clock::time_point{};
}

int pool_impl::settle_creation(const error_code& ec, resource_node* n, const std::exception_ptr& error,
                               std::chrono::steady_clock::time_point started) noexcept {
    core::effects fx;
    if (!n && logging(log_level::warning))
        log(log_level::warning, "creation failed: " + exception_message(error, creation_error(ec)));
    {
        if (n) stamp_new(n);
        const bool timed = n && started != std::chrono::steady_clock::time_point{};
        const auto took = timed ? now() - started : std::chrono::steady_clock::duration{};
        guard g(*state_);
        if (n) {
            if (timed) state_->create_time.record(took);
            state_->core.creation_succeeded(core_of(n), fx);
        } else {
            if (auto* op = op_of(state_->core.creation_failed(fx))) {
                op->create_error = creation_error(ec);
                op->create_exception = error;
            }
        }
    }
    notify(state_->obs, [&](observer& o) {
        if (n)
            o.on_created();
        else
            o.on_create_failed(ec);
    });
    return process(fx, ec);  // the ready effect, at the pre-warm's end, carries ec when it failed
}

void pool_impl::async_wait_ready(signal_handler done) {
    {
        guard g(*state_);
        if (!state_->ready) {
            state_->ready_waiters.push_back(std::move(done));
            return;
        }
    }
    done(state_->ready_ec);
}

// A synchronous factory creates for the caller, in a place nobody waits for (try_acquire, and an
// acquire whose deadline has already passed). nullptr without error: no such place.
resource_node* pool_impl::create_inline(error_code& ec, const respool::source_location& where,
                                        std::exception_ptr* error_out) noexcept {
    if (factory_ != hook_mode::sync) return nullptr;
    {
        guard g(*state_);
        if (!state_->core.begin_inline_creation()) return nullptr;
    }
    error_code cec;
    std::exception_ptr error;
    const auto started = creation_start();
    resource_node* fresh = hooks_->create_sync(cec, error);
    if (fresh) stamp_new(fresh);
    const bool timed = fresh && started != std::chrono::steady_clock::time_point{};
    const auto took = timed ? now() - started : std::chrono::steady_clock::duration{};
    core::effects fx;
    core::status st;
    {
        guard g(*state_);
        if (timed) state_->create_time.record(took);
        if (fresh) {
            // Lent: made for this take, unchecked.
            st = state_->core.inline_created(core_of(fresh), fx, where);
        } else {
            state_->core.inline_failed(fx);
            st = core::status::create_failed;
        }
    }
    notify(state_->obs, [&](observer& o) {
        if (fresh)
            o.on_created();
        else
            o.on_create_failed(cec);
    });
    apply(fx, cec);
    if (!fresh) {
        ec = creation_error(cec);
        if (logging(log_level::warning))
            log(log_level::warning, "creation failed: " + exception_message(error, ec));
        if (error_out) *error_out = error;
        return nullptr;
    }
    if (st != core::status::ok) {  // closed meanwhile: destroyed
        release_self_if_drained();
        ec = to_error(st);
        return nullptr;
    }
    hand_out(fresh, nullptr);  // a fresh resource skips the checks
    return fresh;
}

}  // namespace respool::detail
