// The compiled side of include/respool/detail/request_queue.hpp: the public request_node's room holds
// the core's waiter, and request_queue_base forwards to the core's request_queue.
#include "request_queue.hpp"

#include <respool/detail/request_queue.hpp>

#include <new>
#include <type_traits>

namespace respool::detail {

namespace {

static_assert(sizeof(core::waiter) <= request_node::core_size, "request_node::core_part is too small");
static_assert(alignof(core::waiter) <= 8, "request_node::core_part is not aligned enough");
static_assert(std::is_trivially_destructible_v<core::waiter>, "request_node never destroys its core part");

core::waiter& waiter_of(request_node& n) noexcept {
    return *std::launder(reinterpret_cast<core::waiter*>(n.core_part));
}
const core::waiter& waiter_of(const request_node& n) noexcept {
    return *std::launder(reinterpret_cast<const core::waiter*>(n.core_part));
}
// The room is the first member of request_node, so the waiter's address is the node's.
request_node* node_of(core::waiter* w) noexcept {
    return reinterpret_cast<request_node*>(reinterpret_cast<unsigned char*>(w) -
                                           offsetof(request_node, core_part));
}

}  // namespace

struct request_queue_base::state {
    explicit state(std::size_t max) : q(max) {}
    core::request_queue q;
    std::vector<core::waiter*> out;
    core::effects fx;
};

request_node::request_node() noexcept {
    ::new (static_cast<void*>(core_part)) core::waiter{};
}

request_queue_base::request_queue_base(std::size_t max_waiters) : s_(std::make_unique<state>(max_waiters)) {}
request_queue_base::~request_queue_base() = default;

bool request_queue_base::push(request_node& n, clock::time_point now, clock::duration timeout) {
    return s_->q.push_for(waiter_of(n), now, timeout) == core::status::ok;
}
bool request_queue_base::push_unbounded(request_node& n) {
    return s_->q.push_unbounded(waiter_of(n)) == core::status::ok;
}
void request_queue_base::requeue(request_node& n) {
    s_->q.requeue(waiter_of(n));
}
bool request_queue_base::cancel(request_node& n) noexcept {
    return s_->q.cancel(waiter_of(n));
}
bool request_queue_base::queued(const request_node& n) noexcept {
    return core::request_queue::queued(waiter_of(n));
}
std::size_t request_queue_base::take(std::size_t n, std::vector<request_node*>& out) {
    s_->out.clear();
    const std::size_t k = s_->q.take(n, s_->out);
    for (core::waiter* w : s_->out) out.push_back(node_of(w));
    return k;
}
void request_queue_base::expire(clock::time_point now, std::vector<request_node*>& out) {
    s_->fx.clear();
    s_->q.expire(now, s_->fx);
    for (std::size_t i = 0; i < s_->fx.size(); ++i) out.push_back(node_of(s_->fx[i].w));
}
void request_queue_base::take_all(std::vector<request_node*>& out) {
    s_->fx.clear();
    s_->q.fail_all(core::status::closed, s_->fx);
    for (std::size_t i = 0; i < s_->fx.size(); ++i) out.push_back(node_of(s_->fx[i].w));
}
std::optional<request_queue_base::clock::time_point> request_queue_base::next_deadline() const noexcept {
    return s_->q.next_deadline();
}
std::size_t request_queue_base::size() const noexcept {
    return s_->q.size();
}

}  // namespace respool::detail
