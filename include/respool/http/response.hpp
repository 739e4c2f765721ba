// respool::http: the Beast response for a failed request (map_error in respool/http/status.hpp).
#pragma once

#include <respool/detail/asio_build.hpp>
#include <respool/error.hpp>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

RESPOOL_LAYER_ASIO_BUILD_CHECK(http)  // a mixed Asio build fails to link (detail/asio_build.hpp)

namespace respool::http {

using string_response = boost::beast::http::response<boost::beast::http::string_body>;

// map_error(ec)'s status, `Retry-After: 1` when it says so, `Content-Type: application/json` and
// error_body(); `version` and `keep_alive` are the request's (req.version(), req.keep_alive()).
// prepare_payload() has run: Content-Length is set.
[[nodiscard]] string_response error_response(const error_code& ec, unsigned version, bool keep_alive);

}  // namespace respool::http
