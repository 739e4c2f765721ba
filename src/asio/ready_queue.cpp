// Woken waiters whose handlers run on the pool's executor: one posted drain resumes them in wake order.

#include "engine.hpp"

namespace respool::detail {

// ---- ready queue ----------------------------------------------------------------------------

void pool_impl::make_ready(acquire_op_base* op) noexcept {
    bool post;
    {
        guard g(*s_);
        op->ready_next = nullptr;
        if (s_->ready_tail) s_->ready_tail->ready_next = op;
        else s_->ready_head = op;
        s_->ready_tail = op;
        post = !s_->drain_posted;
        s_->drain_posted = true;
    }
    if (post) post_ex_.execute([self = shared_from_this()] { self->drain_ready(); });
}

// Resumes woken waiters in wake order. A hand-off made by a resumed handler (it released its lease)
// joins the same drain: steady-state hand-offs cost no post at all. Bounded so other handlers on the
// executor are not starved; the rest is re-posted.
void pool_impl::drain_ready() noexcept {
    constexpr int batch = 64;
    for (int i = 0;; ++i) {
        acquire_op_base* op;
        {
            guard g(*s_);
            op = s_->ready_head;
            if (!op) {
                s_->drain_posted = false;
                return;
            }
            if (i == batch) break;
            s_->ready_head = op->ready_next;
            if (!s_->ready_head) s_->ready_tail = nullptr;
        }
        resume(op, op->direct);
    }
    post_ex_.execute([self = shared_from_this()] { self->drain_ready(); });
}

}  // namespace respool::detail
