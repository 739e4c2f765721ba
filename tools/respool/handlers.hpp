// The endpoints of `respool serve` (docs/09-service.md): routing, key checks and the responses of /health,
// /metrics and /kv.
#pragma once

#include "service.hpp"

#include <respool/http/response.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <string_view>

namespace respool_cli {

using request = boost::beast::http::request<boost::beast::http::string_body>;
using response = respool::http::string_response;

// The route pattern of a target, for request metrics: "/health", "/metrics", "/kv/{key}",
// "/kv/{key}/incr", or "unmatched" (never the raw path: each value is a time series).
std::string_view route_of(std::string_view target);

// The response to `req`, on worker `w` (whose store serves /kv).
boost::asio::awaitable<response> handle(service& svc, worker& w, const request& req);

// A JSON error response {"error":..., "message":...} with `status`.
response json_error(unsigned status, std::string_view error, std::string_view message, unsigned version,
                    bool keep_alive);

}  // namespace respool_cli
