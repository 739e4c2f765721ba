#include "framing.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

#include <string>

namespace beast = boost::beast;
namespace bh = boost::beast::http;

namespace respool_cli {
namespace {

// The elements of a comma-separated list (RFC 9110 §5.6.1), whitespace around them trimmed, empty
// ones skipped, handed to `each` in order.
template <class F>
void for_each_element(std::string_view list, F&& each) {
    while (!list.empty()) {
        const auto comma = list.find(',');
        std::string_view element = list.substr(0, comma);
        list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
        while (!element.empty() && (element.front() == ' ' || element.front() == '\t'))
            element.remove_prefix(1);
        while (!element.empty() && (element.back() == ' ' || element.back() == '\t'))
            element.remove_suffix(1);
        if (!element.empty()) each(element);
    }
}

constexpr framing_refusal bad(std::string_view message) {
    return {400, "bad_request", message};
}

}  // namespace

std::optional<framing_refusal> refuse_framing(const bh::request_header<>& header, bool chunked) {
    auto codings = header.equal_range(bh::field::transfer_encoding);
    if (codings.first == codings.second)
        return std::nullopt;  // Content-Length or no body: Beast's own checks
    if (header.version() < 11) return bad("Transfer-Encoding in an HTTP/1.0 request");
    if (header.count(bh::field::content_length) > 0)
        return bad("Transfer-Encoding and Content-Length in one request");
    // The codings of every Transfer-Encoding line, in order, as one list.
    std::size_t count = 0, chunked_at = 0, chunked_count = 0;
    for (auto it = codings.first; it != codings.second; ++it)
        for_each_element(it->value(), [&](std::string_view coding) {
            ++count;
            if (beast::iequals(coding, "chunked")) {
                ++chunked_count;
                chunked_at = count;
            }
        });
    if (chunked_count == 0 || chunked_at != count) return bad("the last transfer coding must be chunked");
    if (chunked_count > 1) return bad("chunked may be applied only once");
    if (!chunked) return bad("Transfer-Encoding that the parser does not read as chunked");  // never seen
    if (count > 1)
        return framing_refusal{501, "not_implemented", "the only transfer coding decoded is chunked"};
    return std::nullopt;
}

}  // namespace respool_cli
