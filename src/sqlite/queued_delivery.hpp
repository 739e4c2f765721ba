// What group commit's and the read batches' queued statements share on the caller's side: delivering
// an outcome, and a statement cancelled while queued completing. An Entry has `handler`
// (void(error_code, result)), `ec`, `res`, `words` (ec's diagnostics) and `diag` (the caller's).
#pragma once

#include <respool/sqlite/connection.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <memory>

namespace respool::sqlite::detail {

// Completes `e` on its handler's associated executor (dispatch: at once when that is where this runs,
// the pool's executor, as usual), its cancellation slot cleared first (the slot is the caller's, and
// this runs on the pool's executor, where the caller initiated the query).
// The words of an acquire that failed: the factory's error_with_diagnostics (an open's failure names
// the path), or none.
inline diagnostics words_of(const respool::diagnostics& acquire) {
    if (acquire.error) {
        try {
            std::rethrow_exception(acquire.error);
        } catch (const error_with_diagnostics& e) {
            return e.get_diagnostics();
        } catch (...) {
        }
    }
    return {};
}

template <class Entry>
void deliver(Entry& e) {
    if (e.ec && e.diag) {
        e.diag->message = describe(e.ec, e.words);
        e.diag->error = std::make_exception_ptr(error_with_diagnostics(e.ec, e.words));
    }
    if (auto slot = boost::asio::get_associated_cancellation_slot(e.handler); slot.is_connected())
        slot.clear();
    boost::asio::dispatch(boost::asio::append(std::move(e.handler), e.ec, std::move(e.res)));
}

// A cancelled entry that left its queue completes with operation_aborted, posted to `ex` (not inside
// the cancellation slot's own handler: delivering clears the slot, which destroys the handler running).
template <class Entry>
void deliver_withdrawn(const std::shared_ptr<Entry>& e, const boost::asio::any_io_executor& ex) {
    e->ec = boost::asio::error::operation_aborted;
    boost::asio::post(ex, [e] { deliver(*e); });
}

// Delivers each entry leaving its queue without running (expired, closed, the acquire failed) with
// `words` beside the error.
inline auto deliver_failed(diagnostics words = {}) {
    return [words = std::move(words)](const auto& e, error_code ec) {
        e->ec = ec;
        e->words = words;
        deliver(*e);
    };
}

}  // namespace respool::sqlite::detail
