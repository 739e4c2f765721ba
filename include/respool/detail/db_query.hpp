// The four forms of a database pool's async_query (pg::pool, sqlite::pool): with or without bound
// parameters, with or without diagnostics. Each pool documents what its async_query does and runs it
// in its own start_query(sql, std::optional<Params>, diagnostics*, handler, handler_executor): the
// last is the handler's executor when it is an any_io_executor (handler_executor.hpp), which a pool
// that completes a statement in place compares with its connection's; the others leave it.
#pragma once

#include <respool/detail/handler_executor.hpp>
#include <respool/error.hpp>
#include <respool/options.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <optional>
#include <string>
#include <utility>

namespace respool::detail::db {

// Base of a database pool (CRTP); Pool befriends it when start_query is private.
template <class Pool, class Params, class Result>
class query_operations {
public:
    template <class Token = boost::asio::deferred_t>
    auto async_query(std::string sql, Token&& token = {}) {
        return async_query(std::move(sql), nullptr, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_query(std::string sql, respool::diagnostics* diag, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, Result)>(
            [pool = &self()](auto handler, std::string s, respool::diagnostics* d) {
                auto ex = respool::detail::io_executor_of(handler, pool->get_executor());  // before it moves
                pool->start_query(std::move(s), std::nullopt, d, std::move(handler), std::move(ex));
            },
            token, std::move(sql), diag);
    }
    template <class Token = boost::asio::deferred_t>
    auto async_query(std::string sql, Params p, Token&& token = {}) {
        return async_query(std::move(sql), std::move(p), nullptr, std::forward<Token>(token));
    }
    template <class Token = boost::asio::deferred_t>
    auto async_query(std::string sql, Params p, respool::diagnostics* diag, Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, Result)>(
            [pool = &self()](auto handler, std::string s, Params q, respool::diagnostics* d) {
                auto ex = respool::detail::io_executor_of(handler, pool->get_executor());  // before it moves
                pool->start_query(std::move(s), std::move(q), d, std::move(handler), std::move(ex));
            },
            token, std::move(sql), std::move(p), diag);
    }

private:
    Pool& self() noexcept { return static_cast<Pool&>(*this); }
};

}  // namespace respool::detail::db
