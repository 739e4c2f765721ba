// Server-side cancel requests: see cancel_request.hpp.
#include "cancel_request.hpp"

#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>

#include <thread>

namespace asio = boost::asio;

namespace respool::pg::detail {

void cancel_mailbox::set_on_return(std::function<void()> f) {
    std::lock_guard lock(m);
    on_return = std::move(f);
}
void cancel_mailbox::started(const asio::any_io_executor& e) {
    std::lock_guard lock(m);
    if (in_flight++ == 0 && open) work = asio::prefer(e, asio::execution::outstanding_work.tracked);
}
void cancel_mailbox::returned() {
    std::lock_guard lock(m);
    if (open && on_return) asio::post(work, on_return);
    if (--in_flight == 0) work = {};
}
bool cancel_mailbox::busy() {
    std::lock_guard lock(m);
    return in_flight > 0;
}
void cancel_mailbox::close() {
    std::lock_guard lock(m);
    open = false;
    on_return = nullptr;
    work = {};
}

bool send_cancel_request(PGconn* conn, const std::shared_ptr<cancel_mailbox>& box,
                         const asio::any_io_executor& ex) {
    PGcancel* pc = conn ? PQgetCancel(conn) : nullptr;
    if (!pc) return false;
    box->started(ex);
    try {
        std::thread([pc, box] {
            char err[256];
            (void)PQcancel(pc, err, sizeof err);
            PQfreeCancel(pc);
            box->returned();
        }).detach();
    } catch (...) {  // no thread: the caller closes the connection instead
        PQfreeCancel(pc);
        box->returned();
        return false;
    }
    return true;
}

}  // namespace respool::pg::detail
