// Runs the effects of core calls: resumptions, creations, destructions, reports, events, log lines.

#include "driver_state.hpp"

#include <respool/detail/duration_text.hpp>

#include <sstream>

namespace respool::detail {

// ---- effects ---------------------------------------------------------------------------------

int pool_impl::process(core::effects& fx, const error_code& create_ec, const resource_node* keep) noexcept {
    int creates = 0;
    for (std::size_t i = 0; i < fx.size(); ++i) {
        const core::effect& e = fx[i];
        switch (e.what) {
        case core::effect::kind::wake: {
            // A pool on one executor resumes every waiter there (its state is touched nowhere else); a
            // thread_safe one may resume a waiter on the waiter's own executor, saving a hop.
            auto* op = op_of(e.w);
            if (op->direct || !state_->thread_safe)
                make_ready(op);
            else
                op->post_resume(op);
            break;
        }
        case core::effect::kind::create: ++creates; break;
        case core::effect::kind::destroy:
            if (node_of(e.r) != keep) destroy_node(node_of(e.r), e.reason);
            break;
        default: process_rare(e, create_ec); break;
        }
    }
    fx.clear();
    return creates;
}

// Reports, circuit changes, back-offs and leaks: rare, and kept out of the hot loop's frame.
void pool_impl::process_rare(const core::effect& e, const error_code& create_ec) noexcept {
    switch (e.what) {
    case core::effect::kind::report_success:
        if (auto* st = state_->strategy.get()) {
            try {
                st->report_success(*this);
            } catch (...) {
            }
        }
        break;
    case core::effect::kind::report_failure:
        if (auto* st = state_->strategy.get()) {
            error_code ec = e.st == core::status::create_failed          ? creation_error(create_ec)
                            : e.reason == core::destroy_reason::poisoned ? error_code(errc::poisoned)
                                                                         : error_code(errc::broken);
            try {
                st->report_failure(*this, ec);
            } catch (...) {
            }
        }
        break;
    case core::effect::kind::circuit_changed: {
        const circuit_state cs = state();
        notify(state_->obs, [&](observer& o) { o.on_circuit_changed(cs); });
        log(cs == circuit_state::open ? log_level::warning : log_level::info,
            std::string("circuit ") + to_string(cs) +
                (cs == circuit_state::open        ? ": acquires fail fast"
                 : cs == circuit_state::half_open ? ": probing"
                                                  : ": normal operation"));
        break;
    }
    case core::effect::kind::retry_after: {
        const error_code cause = creation_error(create_ec);
        notify(state_->obs, [&](observer& o) { o.on_creation_retry(cause, e.d); });
        if (logging(log_level::warning))
            log(log_level::warning,
                "creation failed (" + cause.message() + "); next attempt in about " +
                    duration_text(std::chrono::duration_cast<std::chrono::milliseconds>(e.d)));
        arm_retry(e.d);
        break;
    }
    case core::effect::kind::leak_suspected:
    case core::effect::kind::leak_returned: {
        // Only the effect's own values: the lease may be back and its resource destroyed by now.
        const auto held = std::chrono::nanoseconds(e.d);
        const respool::source_location& at = e.where;
        const bool back = e.what == core::effect::kind::leak_returned;
        notify(state_->obs, [&](observer& o) {
            if (back)
                o.on_leak_returned(held, at);
            else
                o.on_leak_suspected(held, at);
        });
        if (logging(back ? log_level::info : log_level::warning)) {
            std::ostringstream m;
            m << (back ? "leaked lease returned after " : "leak suspected: lease held for ")
              << duration_text(std::chrono::duration_cast<std::chrono::milliseconds>(held))
              << ", acquired at " << (at.file_name()[0] ? at.file_name() : "?") << ':' << at.line() << " ("
              << at.function_name() << ')';
            log(back ? log_level::info : log_level::warning, m.str());
        }
        break;
    }
    case core::effect::kind::ready: {  // the pre-warm is over: async_wait_ready completes
        const error_code ec = e.st == core::status::create_failed ? creation_error(create_ec)
                              : e.st == core::status::closed      ? error_code(errc::closed)
                                                                  : error_code();
        std::vector<signal_handler> waiters;
        {
            guard g(*state_);
            state_->ready = true;
            state_->ready_ec = ec;
            waiters.swap(state_->ready_waiters);
        }
        fire(waiters, ec);
        break;
    }
    case core::effect::kind::drained: {  // closed and empty: async_close completes
        std::vector<driver_state::close_waiter> waiters;
        {
            guard g(*state_);
            waiters.swap(state_->close_waiters);
            for (auto& w : waiters) state_->cancel_timer(w.grace);
            state_->rearm();
        }
        for (auto& w : waiters) w.done({});
        break;
    }
    default: break;
    }
}

void pool_impl::apply(core::effects& fx, const error_code& create_ec, const resource_node* keep) noexcept {
    const int creates = process(fx, create_ec, keep);
    if (creates) start_creations(creates);
}

void pool_impl::destroy_node(resource_node* n, destroy_reason why) noexcept {
    // The messages are built only for a sink that wants them, and a message that finds no memory is
    // dropped: destroying a resource must not fail for a log line.
    const bool failed = !hooks_->destroy(n);
    const log_level level = failed ? log_level::warning : log_level::debug;
    if ((failed || why == destroy_reason::idle_timeout || why == destroy_reason::lifetime) &&
        logging(level)) {
        try {
            log(level, failed ? std::string("destructor hook failed (") + to_string(why) + ")"
                              : std::string("destroyed an idle resource: ") + to_string(why));
        } catch (...) {
        }
    }
    notify(state_->obs, [&](observer& o) {
        if (why == destroy_reason::poisoned) o.on_poisoned();
        o.on_destroyed(why);
    });
}

}  // namespace respool::detail
