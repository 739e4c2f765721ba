// The completion batch's drain and its bounded wait (the rules are in completion_batch.hpp).
#include "completion_batch.hpp"

#include "spin_pause.hpp"

#include <boost/asio/post.hpp>

namespace respool::sqlite::detail {

using clock_type = std::chrono::steady_clock;

completion_batch::completion_batch(boost::asio::any_io_executor ex, batch_settings s)
    : ex_(std::move(ex)), settings_(s) {}

completion_batch::~completion_batch() {
    completion_node* n = head_;
    while (n) {
        completion_node* next = n->next;
        n->discard();
        n = next;
    }
}

void completion_batch::push(completion_node* n) noexcept {
    n->next = nullptr;
    bool post = false;
    {
        std::lock_guard lock(m_);
        if (tail_)
            tail_->next = n;
        else
            head_ = n;
        tail_ = n;
        ready_.store(true, std::memory_order_release);
        post = !scheduled_;
        scheduled_ = true;
    }
    if (post) post_drain();
}

void completion_batch::expect() noexcept {
    const std::size_t out = outstanding_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (out > settings_.spin_while_at_most || settings_.spin_for <= std::chrono::nanoseconds::zero()) return;
    {
        std::lock_guard lock(m_);
        if (scheduled_) return;
        scheduled_ = true;
    }
    post_drain();
}

void completion_batch::post_drain() noexcept {
    // The drain keeps the batch alive: the last connection may go while it is queued.
    boost::asio::post(ex_, [self = shared_from_this()] { self->drain(); });
}

bool completion_batch::wait_for_more() noexcept {
    const std::size_t out = outstanding_.load(std::memory_order_relaxed);
    if (out == 0 || out > settings_.spin_while_at_most) return false;
    return spin_until([this] { return ready_.load(std::memory_order_acquire); }, settings_.spin_for);
}

void completion_batch::drain() noexcept {
    const auto start = clock_type::now();
    bool waited = false;
    for (;;) {
        completion_node* list = nullptr;
        {
            std::lock_guard lock(m_);
            list = head_;
            head_ = tail_ = nullptr;
            ready_.store(false, std::memory_order_relaxed);
            // Nothing now, and the wait (below) found nothing either: the next push posts again.
            if (!list && waited) {
                scheduled_ = false;
                return;
            }
        }
        if (!list) {
            waited = !wait_for_more();
            continue;
        }
        waited = false;
        while (list) {
            completion_node* n = list;
            list = list->next;
            outstanding_.fetch_sub(1, std::memory_order_relaxed);
            n->complete();  // may submit the next job (expect() again) or drop the last connection
        }
        if (clock_type::now() - start >= settings_.budget) {
            post_drain();  // scheduled_ stays set: the loop runs its other handlers, then this again
            return;
        }
    }
}

std::shared_ptr<completion_batch> batch_registry::get(const boost::asio::any_io_executor& ex) {
    std::lock_guard lock(m_);
    std::erase_if(batches_, [](const std::weak_ptr<completion_batch>& w) { return w.expired(); });
    std::shared_ptr<completion_batch> found;
    for (auto& w : batches_) {
        auto b = w.lock();
        if (b && b->executor() == ex) {
            found = std::move(b);
            break;
        }
    }
    if (!found) {
        found = std::make_shared<completion_batch>(ex, settings_);
        batches_.push_back(found);
    }
    return found;
}

}  // namespace respool::sqlite::detail
