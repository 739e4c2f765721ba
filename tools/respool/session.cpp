// One HTTP/1.1 connection of `respool serve`, as a coroutine on its worker's loop.
//  Keep-alive: requests are read one after another until the client or the response says close.
//  Timeouts: a request's header must arrive within --idle-timeout of the previous response (the
//  keep-alive wait and a slow header share it); its body and its response get --request-timeout.
//  Body limit: 1 MiB (serve_config::body_limit). A larger Content-Length is refused after the header alone, a
//  chunked body once it grows past it: 413, then the connection is closed.
//  Line endings: CRLF only. A header line ending in a bare LF (or a bare CR) is refused (400, RFC 9112
//  §2.2 lets a server refuse it), however the header was split across reads (read_header); so is a
//  folded field line (obs-fold, RFC 9112 §5.2).
//  Framing: a request whose body length is ambiguous (framing.hpp) gets 400 (501 for a transfer coding
//  other than chunked) once its header is read, before any byte of its body, and the connection closes.
#include "framing.hpp"
#include "handlers.hpp"
#include "line_breaks.hpp"
#include "service.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/read_size.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include <array>
#include <chrono>
#include <string_view>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bh = boost::beast::http;

namespace respool_cli {
namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

// Removes the session from its worker when it ends, and tells a stopping worker when it was the last.
struct registration {
    worker& w;
    std::list<worker::session_entry>::iterator it;
    ~registration() {
        w.sessions.erase(it);
        if (w.stopping && w.sessions.empty() && w.on_drained) {
            auto drained = std::move(w.on_drained);
            w.on_drained = nullptr;
            drained();
        }
    }
};

using request_parser = bh::request_parser<bh::string_body>;

// Reads until `parser` has the request's header, as bh::async_read_header does, with one check more.
// Beast's parser refuses a bare LF (or CR) when the whole header is in its buffer (bad version, bad
// field), but fed a header in pieces it waits for the blank line "\r\n\r\n" before it looks again,
// which a header of bare LFs never sends: the session waited for more, up to the header limit, the idle
// timeout or the client's close, and answered nothing. So whenever the parser asks for more, what it
// has not taken is looked at: a bare line break there is an error already, the same 400 whatever the
// reads were. A folded line is looked for before the parser is given the bytes, since it unfolds what
// it takes (it never takes a field line before the byte after it, so no fold gets past the look).
asio::awaitable<beast::error_code> read_header(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                               request_parser& parser) {
    for (;;) {
        if (buffer.size() > 0) {
            const auto pending = buffer.data();
            if (has_obs_fold({static_cast<const char*>(pending.data()), pending.size()}))
                co_return bh::error::bad_obs_fold;
            beast::error_code ec;
            buffer.consume(parser.put(buffer.data(), ec));
            if (!ec && parser.is_header_done()) co_return ec;
            if (ec && ec != bh::error::need_more) co_return ec;
            const auto unparsed = buffer.data();
            if (has_bare_line_break({static_cast<const char*>(unparsed.data()), unparsed.size()}))
                co_return bh::error::bad_line_ending;
        }
        const std::size_t room = beast::read_size(buffer, 65536);  // grows from 512 bytes, as Beast's
        if (room == 0) co_return bh::error::buffer_overflow;
        auto [ec, n] = co_await stream.async_read_some(buffer.prepare(room), tuple_awaitable);
        if (ec == asio::error::eof) {
            if (!parser.got_some()) co_return bh::error::end_of_stream;  // between requests: a close
            beast::error_code eof_ec;
            parser.put_eof(eof_ec);  // partial_message: cut short
            co_return eof_ec;
        }
        if (ec) co_return ec;
        buffer.commit(n);
    }
}

bool is_http_parse_error(const beast::error_code& ec) {
    return ec.category() == beast::error_code(bh::error::bad_target).category() &&
           ec != bh::error::end_of_stream && ec != bh::error::partial_message;
}

// After a refused request the client may still be sending its body: read and discard a bounded amount
// so that closing does not reset the connection before the client has read the response.
asio::awaitable<void> drain(beast::tcp_stream& stream) {
    std::array<char, 16384> sink;
    std::size_t total = 0;
    stream.expires_after(std::chrono::seconds(2));
    while (total < 8 * 1024 * 1024) {
        auto [ec, n] = co_await stream.async_read_some(asio::buffer(sink), tuple_awaitable);
        if (ec) break;
        total += n;
    }
}

}  // namespace

asio::awaitable<void> run_session(service& svc, worker& w, beast::tcp_stream stream) {
    registration reg{w, w.sessions.insert(w.sessions.end(), worker::session_entry{&stream})};
    const serve_config& cfg = svc.cfg;
    beast::flat_buffer buffer;
    bool refused = false;  // a 400, 413 or 501 was sent: drain, then close
    for (;;) {
        if (w.stopping) break;
        request_parser parser;
        parser.body_limit(cfg.body_limit);
        reg.it->busy = false;
        stream.expires_after(cfg.idle_timeout);
        beast::error_code ec = co_await read_header(stream, buffer, parser);
        reg.it->busy = true;
        const auto start = std::chrono::steady_clock::now();
        // The framing is judged on the header alone: a refused request's body is never read.
        const auto framing = ec ? std::nullopt : refuse_framing(parser.get().base(), parser.chunked());
        if (!ec && !framing && !parser.is_done()) {
            if (beast::iequals(parser.get()[bh::field::expect], "100-continue")) {
                bh::response<bh::empty_body> go_on(bh::status::continue_, parser.get().version());
                stream.expires_after(cfg.request_timeout);
                auto [cec, cn] = co_await bh::async_write(stream, go_on, tuple_awaitable);
                if (cec) break;
            }
            stream.expires_after(cfg.request_timeout);
            auto [bec, bn] = co_await bh::async_read(stream, buffer, parser, tuple_awaitable);
            ec = bec;
        }
        if (ec || framing) {
            const bool too_large = ec == bh::error::body_limit;
            if (ec && !too_large && !is_http_parse_error(ec)) break;  // closed, timed out, stopped
            // The header was parsed for a framing refusal or a body too large; a parse error may have
            // left none.
            const bool header_read = framing || too_large;
            const auto target = header_read ? std::string(parser.get().target()) : std::string();
            const auto method =
                header_read ? std::string(parser.get().method_string()) : std::string("other");
            auto res =
                framing ? json_error(framing->status, framing->error, framing->message, 11, false)
                : too_large
                    ? json_error(413, "payload_too_large", "a request body is at most 1 MiB", 11, false)
                    : json_error(400, "bad_request", "malformed HTTP request: " + ec.message(), 11, false);
            stream.expires_after(cfg.request_timeout);
            auto [wec, wn] = co_await bh::async_write(stream, res, tuple_awaitable);
            w.metrics.record(header_read ? route_of(target) : "unmatched", method, res.result_int(),
                             std::chrono::steady_clock::now() - start);
            refused = !wec;
            break;
        }
        request req = parser.release();
        response res = co_await handle(svc, w, req);
        if (w.stopping) res.keep_alive(false);  // shutting down: this response is the last
        stream.expires_after(cfg.request_timeout);
        auto [wec, wn] = co_await bh::async_write(stream, res, tuple_awaitable);
        w.metrics.record(route_of(req.target()), req.method_string(), res.result_int(),
                         std::chrono::steady_clock::now() - start);
        if (wec || !res.keep_alive()) break;
    }
    beast::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    if (refused) co_await drain(stream);
    stream.close();
}

void stop_sessions(worker& w, std::function<void()> drained) {
    w.stopping = true;
    if (w.probe_timer) w.probe_timer->cancel();
    if (w.sessions.empty()) {
        asio::post(w.io, std::move(drained));
        return;
    }
    w.on_drained = std::move(drained);
    for (auto& s : w.sessions)
        if (!s.busy) s.stream->cancel();  // waiting for a request: ends now
}

void abort_sessions(worker& w) {
    for (auto& s : w.sessions) s.stream->cancel();
}

}  // namespace respool_cli
