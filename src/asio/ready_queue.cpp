// Woken waiters whose handlers run on the pool's executor: one posted drain resumes them in wake order.

#include "driver_state.hpp"

namespace respool::detail {

namespace {
// The posted drain of the ready queue. Destroyed without running (its io_context torn down), it
// abandons the queued operations instead of leaking them.
class drain_task {
public:
    explicit drain_task(std::shared_ptr<pool_impl> p) noexcept : p_(std::move(p)) {}
    drain_task(drain_task&&) noexcept = default;
    drain_task& operator=(drain_task&&) = delete;
    ~drain_task() {
        if (p_) p_->abandon_ready();
    }
    void operator()() {
        const auto p = std::move(p_);
        p->drain_ready();
    }

private:
    std::shared_ptr<pool_impl> p_;
};
}  // namespace

// ---- ready queue ----------------------------------------------------------------------------

void pool_impl::make_ready(acquire_op_base* op) noexcept {
    bool post;
    {
        guard g(*state_);
        op->ready_next = nullptr;
        if (state_->ready_tail)
            state_->ready_tail->ready_next = op;
        else
            state_->ready_head = op;
        state_->ready_tail = op;
        post = !state_->drain_posted;
        state_->drain_posted = true;
    }
    if (post) post_executor.execute(drain_task(shared_from_this()));
}

// Resumes woken waiters in wake order. A hand-off made by a resumed handler (it released its lease)
// joins the same drain: steady-state hand-offs cost no post at all. Bounded so other handlers on the
// executor are not starved; the rest is re-posted.
void pool_impl::drain_ready() noexcept {
    constexpr int batch = 64;
    for (int i = 0;; ++i) {
        acquire_op_base* op;
        {
            guard g(*state_);
            op = state_->ready_head;
            if (!op) {
                state_->drain_posted = false;
                return;
            }
            if (i == batch) break;
            state_->ready_head = op->ready_next;
            if (!state_->ready_head) state_->ready_tail = nullptr;
        }
        resume(op, op->direct);
    }
    post_executor.execute(drain_task(shared_from_this()));
}

// The drain was destroyed unrun: its io_context is being torn down. The woken operations it would
// have resumed are destroyed too (Asio's rule for pending handlers), and the core forgets them (a
// reserved place moves on), so neither they nor the pool they hold leak.
void pool_impl::abandon_ready() noexcept {
    for (;;) {
        acquire_op_base* op;
        core::effects fx;
        {
            guard g(*state_);
            op = state_->ready_head;
            if (!op) {
                state_->drain_posted = false;
                return;
            }
            state_->ready_head = op->ready_next;
            if (!state_->ready_head) state_->ready_tail = nullptr;
            state_->core.cancel(core_of(op),
                                fx);  // a reserved place moves on; a failed one is already decided
        }
        op->destroy(op);
        apply(fx);
    }
}

}  // namespace respool::detail
