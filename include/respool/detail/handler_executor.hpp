// A handler's executor, read where the handler's type is still known: the operations compiled into the
// library take their handlers type-erased, and asking an erased handler for its executor wraps that
// executor anew (an allocation when it is an any_io_executor, a coroutine's). Read once before
// erasing, it lets a reply call the handler in place when the handler runs on the connection's
// executor.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>

#include <type_traits>

namespace respool::detail {

// `h`'s associated executor when it is an any_io_executor (`fallback` when it has none); an empty
// executor when it is of another type, which tells the operation to ask the handler at its end.
template <class Handler>
boost::asio::any_io_executor io_executor_of(const Handler& h, const boost::asio::any_io_executor& fallback) {
    using executor = boost::asio::associated_executor_t<Handler, boost::asio::any_io_executor>;
    if constexpr (std::is_same_v<executor, boost::asio::any_io_executor>)
        return boost::asio::get_associated_executor(h, fallback);
    else
        return {};
}

}  // namespace respool::detail
