// The deadline of a borrow from a pool whose async_acquire takes none (respool/http/request_lease.hpp).
#include <respool/http/request_lease.hpp>

#include <boost/asio/steady_timer.hpp>

namespace respool::http::detail {

duration time_left(std::chrono::steady_clock::time_point deadline) noexcept {
    const auto left = deadline - std::chrono::steady_clock::now();
    return left > duration::zero() ? std::chrono::duration_cast<duration>(left) : duration::zero();
}

// Shared with the timer's handler, which may run after the guard is gone (cancelled, but queued).
struct acquire_deadline::state {
    explicit state(const boost::asio::any_io_executor& ex) : timer(ex) {}
    boost::asio::steady_timer timer;
    boost::asio::cancellation_signal signal;
    bool expired = false;
    bool done = false;  // the guard is gone: the acquire it bounded has completed
};

acquire_deadline::acquire_deadline(const boost::asio::any_io_executor& ex,
                                   std::chrono::steady_clock::time_point deadline)
    : s_(std::make_shared<state>(ex)) {
    s_->timer.expires_at(deadline);
    s_->timer.async_wait([s = s_](const error_code& ec) {
        if (ec || s->done) return;
        s->expired = true;
        s->signal.emit(boost::asio::cancellation_type::terminal);
    });
}

acquire_deadline::~acquire_deadline() {
    s_->done = true;
    s_->timer.cancel();
}

boost::asio::cancellation_slot acquire_deadline::slot() noexcept {
    return s_->signal.slot();
}

bool acquire_deadline::expired() const noexcept {
    return s_->expired;
}

}  // namespace respool::http::detail
