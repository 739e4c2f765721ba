// How a request's body is delimited (HTTP/1.1 message framing, RFC 9112 §6), checked once its header is
// parsed and before any byte of its body is read. A request whose length a proxy in front of the
// service could read differently from Beast's parser (request smuggling) is refused, and its connection
// closed, so that nothing after it is taken for a request.
//
// Beast's parser (Boost 1.81) already refuses: Content-Length and a chunked Transfer-Encoding together
// (either order), any Transfer-Encoding after a Content-Length, a second Transfer-Encoding after one
// ending in chunked, Content-Lengths that differ or are not plain digits within 64 bits, whitespace
// before a field's colon, control characters (vertical tab...) in a value, chunk sizes past 64 bits.
// What it lets through, and this check refuses: a Transfer-Encoding whose last coding is not chunked
// (Beast then reads no body, or a Content-Length's), chunked more than once, a Transfer-Encoding of
// other codings followed by a Content-Length, Transfer-Encoding in HTTP/1.0, and codings before chunked
// (the body would be stored still encoded). Folded header lines (obs-fold) are refused while the
// header is read (line_breaks.hpp).
#pragma once

#include <boost/beast/http/message.hpp>

#include <optional>
#include <string_view>

namespace respool_cli {

struct framing_refusal {
    unsigned status;           // 400, or 501 for a transfer coding the service does not decode
    std::string_view error;    // the JSON body's "error"
    std::string_view message;  // what is wrong, for the JSON body's "message"
};

// The refusal of `header`'s framing, or nothing when its body can be read as Beast's parser will read
// it. `chunked`: the parser decodes the body as chunked (basic_parser::chunked()).
std::optional<framing_refusal> refuse_framing(const boost::beast::http::request_header<>& header,
                                              bool chunked);

}  // namespace respool_cli
