#include <respool/http/response.hpp>
#include <respool/http/status.hpp>

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>

namespace respool::http {

string_response error_response(const error_code& ec, unsigned version, bool keep_alive) {
    namespace bh = boost::beast::http;
    const error_mapping m = map_error(ec);
    string_response res{static_cast<bh::status>(m.status), version};
    res.set(bh::field::content_type, "application/json");
    if (m.retry_after) res.set(bh::field::retry_after, "1");
    res.keep_alive(keep_alive);
    res.body() = error_body(m);
    res.prepare_payload();
    return res;
}

}  // namespace respool::http
