// libFuzzer: the request path of `respool serve` (tools/respool: session.cpp's parser, limits and
// keep-alive, handlers.cpp's routing and key checks) on a real SQLite store in a temporary folder.
// Each input is sent as raw bytes over a loopback TCP connection to the real session coroutine, in up
// to four writes split where the input's first byte says (pipelined and partial requests), then the
// client half-closes and reads every response until the session closes.
//
// Checked for every input:
//  - every response parses as HTTP/1.1, and its status is one docs/09-service.md gives (after a 100 Continue
//    when the request asked for one): 200, 204, 400, 404,
//    405, 409, 413, 501 (a transfer coding other than chunked), or 503/504 (the pool's deadline); never
//    a 500 (a bad request must never reach the database as an error) nor anything else;
//  - a response closing the connection (a malformed request's 400, a body too large's 413, a 501, an
//    HTTP/1.0 request without keep-alive) is the last one;
//  - the first request, read by Beast's own request_parser with the session's limits (body 1 MiB as
//    serve_config::body_limit here, Beast's default header limit, which session.cpp keeps), and the
//    session's own rules on top of it (no bare line breaks nor folded lines in the header,
//    line_breaks.hpp; no ambiguous framing, framing.hpp: checked once the header is parsed, before its
//    body) decide the first answer: a malformed request gets 400 (413 when the parser's error is
//    body_limit, 501 for a coding before chunked) with Connection: close and nothing after it (after a
//    100 Continue at most, when its header asked for one and the error is in the body), so that no
//    request smuggled in its body ever runs; a complete, well-formed request gets a response (an empty
//    reply is a failure); only a request cut short by the end of the input may get no response at all,
//    or one the parser judges differently whole and in the writes' pieces (see classify);
//  - the session ends (the read of the responses has a 10 s deadline: past it the fuzzer aborts, a hang);
//  - nothing crashes, leaks or reads out of bounds (ASan + UBSan in the fuzz preset).
#include "framing.hpp"
#include "handlers.hpp"
#include "kv_store.hpp"
#include "line_breaks.hpp"
#include "service.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <boost/beast/http/string_body.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bh = boost::beast::http;
using asio::ip::tcp;

namespace {

constexpr std::size_t body_limit = 1024 * 1024;  // the service's request body limit

struct harness {
    std::filesystem::path dir;
    respool_cli::service svc;
    respool_cli::worker* w = nullptr;
    std::unique_ptr<tcp::acceptor> acceptor;

    harness() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "respool-fuzz-http-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) std::abort();
        dir = tmpl;
        svc.cfg.db = "sqlite:" + (dir / "kv.db").string();
        svc.cfg.max = 2;
        svc.cfg.borrow_timeout = std::chrono::seconds(2);
        svc.cfg.request_timeout = std::chrono::seconds(2);
        svc.cfg.idle_timeout = std::chrono::seconds(2);
        svc.cfg.body_limit = body_limit;
        svc.target = {respool_cli::db_kind::sqlite, (dir / "kv.db").string(), (dir / "kv.db").string()};
        svc.workers.push_back(std::make_unique<respool_cli::worker>(0));
        w = svc.workers.back().get();
        w->store = respool_cli::make_store(w->io.get_executor(), svc.target, svc.cfg);
        bool probed = false;
        asio::co_spawn(w->io, w->store->probe(), [&](std::exception_ptr, respool::error_code ec) {
            if (ec) {
                std::fprintf(stderr, "fuzz_http_requests: the store does not work: %s\n",
                             ec.message().c_str());
                std::abort();
            }
            probed = true;
        });
        // Not run(): the pools keep timers of their own, the loop would never run out of work.
        while (!probed && w->io.run_one_for(std::chrono::seconds(30)) > 0) {
        }
        w->io.restart();
        if (!probed) std::abort();
        acceptor = std::make_unique<tcp::acceptor>(w->io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    }
};

harness* the_one = nullptr;

harness& the_harness() {
    if (!the_one) {
        the_one = new harness;  // never destroyed (its threads may still run at exit)
        std::atexit([] {        // libFuzzer ends with exit(): the database files go
            std::error_code ignored;
            std::filesystem::remove_all(the_one->dir, ignored);
        });
    }
    return *the_one;
}

bool allowed(unsigned status) {
    switch (status) {
    case 100:  // the interim answer to Expect: 100-continue
    case 200:
    case 204:
    case 400:
    case 404:
    case 405:
    case 409:
    case 413:
    case 501:
    case 503:
    case 504: return true;
    default: return false;
    }
}

[[noreturn]] void fail(const char* what, const std::string& detail = {}) {
    std::fprintf(stderr, "fuzz_http_requests: %s %.400s\n", what, detail.c_str());
    std::abort();
}

// What Beast's request parser, with the session's limits, makes of the input's first request.
enum class first_request {
    cut_short,         // the input ends inside it (or is empty): the session may close without a response
    complete,          // parsed whole and well-formed: it gets a response
    malformed,         // a parse error: 400
    too_large,         // body_limit: 413
    not_implemented,   // a transfer coding before chunked (framing.hpp): 501
    header_too_large,  // Beast's header limit (8 KiB): 400, as malformed
    either,            // the verdict depends on the split in a way classify allows
};

// The bytes arrive in `pieces` (the session's reads see them so, or coalesced); after each, the parser
// is given everything not consumed yet, as the session's reads do.
first_request classify(const std::vector<std::string>& pieces) {
    bh::request_parser<bh::string_body> p;  // as session.cpp: a fresh parser, header_limit left as is
    p.body_limit(body_limit);
    p.eager(false);  // the header alone first: its framing is judged before any byte of the body
    beast::error_code ec;
    std::string input;
    std::size_t at = 0;
    bool framing_judged = false;
    for (const std::string& piece : pieces) {
        input += piece;
        while (!p.is_done() && at < input.size()) {
            // session.cpp's read_header refuses a folded header line before the parser (which would
            // unfold it) takes it.
            if (!p.is_header_done() && respool_cli::has_obs_fold(std::string_view(input).substr(at)))
                return first_request::malformed;
            const std::size_t n = p.put(asio::buffer(input.data() + at, input.size() - at), ec);
            at += n;
            if (ec == bh::error::need_more) {
                ec = {};
                // While the header is incomplete, session.cpp's read_header refuses a bare line break in
                // what the parser has not taken (Beast alone would wait for a blank line that never
                // comes).
                if (!p.is_header_done() &&
                    respool_cli::has_bare_line_break(std::string_view(input).substr(at)))
                    return first_request::malformed;
                if (n == 0) break;  // what is there does not complete the element: the next read
                continue;
            }
            if (ec == bh::error::body_limit) return first_request::too_large;
            if (ec == bh::error::header_limit) return first_request::header_too_large;
            if (ec) return first_request::malformed;
            if (p.is_header_done() && !framing_judged) {
                framing_judged = true;
                if (const auto refusal = respool_cli::refuse_framing(p.get().base(), p.chunked()))
                    return refusal->status == 501 ? first_request::not_implemented : first_request::malformed;
                p.eager(true);  // the body in as few puts as the reads allow
            }
            if (n == 0) break;  // no progress (never seen): as if waiting for more
        }
        if (p.is_done()) return first_request::complete;
    }
    // The end of the input: the session reads the end of the stream (the client half-closed). Nothing
    // received at all is end_of_stream for Beast's read operations (put_eof alone would say done).
    if (!p.got_some()) return first_request::cut_short;
    p.put_eof(ec);
    if (!ec && p.is_done()) return first_request::complete;
    if (!ec || ec == bh::error::partial_message || ec == bh::error::end_of_stream)
        return first_request::cut_short;
    return first_request::malformed;
}

// The first request as the session may read it. TCP may coalesce the writes or split them further,
// and the session's reads take at most what its buffer offers (from 512 bytes, as Beast's own reads):
// the reads' boundaries are not the writes'. Beast's parser, once it has asked for more of a header,
// looks at it again only when its blank line ("\r\n\r\n") is there: an error early in a header is
// found at once when the header is in one buffer, and once the header is complete when it came in
// pieces. So the verdict is taken three ways: whole, in the writes' pieces, and deferred (5 bytes, then
// the rest: the parser then waits for the blank line, as after any short first read). All three agree,
// or the request is one whose verdict may depend on the reads, and only the general checks apply:
//  - malformed in one buffer, cut short in pieces: a malformed header that the input never completes;
//  - Beast's header limit on either side: it counts 8 KiB from where each put of a header starts, not
//    from the request's start, so a header near the limit may pass it one way and not the other.
// Any other difference is a failure. (A header of bare LF line endings, complete in its sender's eyes,
// never has that blank line: session.cpp's read_header refuses bare line breaks in pieces too, and the
// model above does the same, so such a header is malformed all three ways.)
first_request classify(const std::string& input, const std::vector<std::string>& pieces) {
    const first_request whole = classify(std::vector<std::string>{input});
    const first_request split = classify(pieces);
    const first_request deferred =
        input.size() > 5 ? classify(std::vector<std::string>{input.substr(0, 5), input.substr(5)}) : whole;
    if (split == whole && deferred == whole) return whole;
    auto either_of = [](first_request v, std::initializer_list<first_request> allowed) {
        return std::find(allowed.begin(), allowed.end(), v) != allowed.end();
    };
    const auto header_cut = {first_request::malformed, first_request::cut_short};
    if (either_of(whole, header_cut) && either_of(split, header_cut) && either_of(deferred, header_cut))
        return first_request::either;
    if (whole == first_request::header_too_large || split == first_request::header_too_large ||
        deferred == first_request::header_too_large)
        return first_request::either;
    fail("the first request's verdict depends on how it is split:", input);
}

struct response_seen {
    unsigned status;
    bool keep_alive;
    bool says_close;  // a Connection header with the close token
};

// Parses what the session sent back: a sequence of whole responses, checked one by one.
std::vector<response_seen> check_responses(const std::string& bytes) {
    std::vector<response_seen> seen;
    beast::flat_buffer buf;
    if (bytes.empty()) return seen;  // the session closed without a response
    auto room = buf.prepare(bytes.size());
    std::memcpy(room.data(), bytes.data(), bytes.size());
    buf.commit(bytes.size());
    bool last_seen = false;
    while (buf.size() > 0) {
        if (last_seen) fail("a response after one that closed the connection");
        bh::response_parser<bh::string_body> p;
        p.body_limit(8 * 1024 * 1024);
        p.eager(true);
        beast::error_code ec;
        while (!p.is_done()) {
            const std::size_t n = p.put(buf.data(), ec);
            if (ec == bh::error::need_more) {
                ec = {};
                // Content-Length-less responses are not sent by the service: need_more with no bytes
                // left means a response was cut short.
                if (n == 0) fail("a response was cut short");
            }
            if (ec) fail("a response does not parse:", ec.message());
            buf.consume(n);
        }
        const unsigned status = p.get().result_int();
        if (!allowed(status)) fail("status outside the service's documented set:", std::to_string(status));
        bool says_close = false;
        for (const auto& token : bh::token_list(p.get()[bh::field::connection]))
            says_close |= beast::iequals(token, "close");
        seen.push_back({status, p.get().keep_alive(), says_close});
        if (status == 100) continue;
        // A malformed request (400) or a body too large (413) is refused with Connection: close, as is
        // any request that did not ask to keep the connection: nothing may follow such a response.
        if (!p.get().keep_alive()) last_seen = true;
    }
    return seen;
}

// The first answer against what the parser made of the first request.
void check_first(first_request kind, const std::vector<response_seen>& seen, const std::string& bytes) {
    std::size_t i = 0;
    while (i < seen.size() && seen[i].status == 100) ++i;  // interim answers to Expect: 100-continue
    const bool answered = i < seen.size();
    switch (kind) {
    case first_request::cut_short:
    case first_request::either: return;
    case first_request::complete:
        if (!answered) fail("no response to a complete, well-formed request; received:", bytes);
        return;
    case first_request::malformed:
    case first_request::header_too_large:
    case first_request::not_implemented:
    case first_request::too_large: {
        const unsigned want = kind == first_request::too_large         ? 413
                              : kind == first_request::not_implemented ? 501
                                                                       : 400;
        if (!answered) fail("no response to a malformed request; received:", bytes);
        if (i > 1) fail("more than one 100 Continue before the refusal");
        if (seen[i].status != want)
            fail(kind == first_request::too_large         ? "a body over the limit did not get 413 but"
                 : kind == first_request::not_implemented ? "a coding before chunked did not get 501 but"
                                                          : "a malformed request did not get 400 but",
                 std::to_string(seen[i].status));
        if (seen[i].keep_alive || !seen[i].says_close) fail("a refusal without Connection: close");
        if (i + 1 != seen.size()) fail("a response after the refusal of a malformed request");
        return;
    }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 64 * 1024) return -1;  // bounded inputs: the body limit is tested by the seeds' headers
    harness& h = the_harness();
    auto& io = h.w->io;
    // The first byte chooses up to three split points for the writes (0: one write).
    const unsigned splits = size ? data[0] % 4u : 0;
    const std::string input(reinterpret_cast<const char*>(data) + (size ? 1 : 0), size ? size - 1 : 0);

    // Connected asynchronously: libFuzzer's -timeout alarm (SIGALRM) interrupts blocking calls, and a
    // blocking connect or accept would fail with EINTR now and then.
    tcp::socket client(io);
    tcp::socket server(io);
    beast::error_code connect_ec, accept_ec;
    int pending = 2;
    client.async_connect(h.acceptor->local_endpoint(), [&](beast::error_code ec) {
        connect_ec = ec;
        --pending;
    });
    h.acceptor->async_accept(server, [&](beast::error_code ec) {
        accept_ec = ec;
        --pending;
    });
    while (pending > 0) io.run_one();
    io.restart();  // the loop ran out of work with the second completion: it stopped
    if (connect_ec || accept_ec)
        fail("the loopback connection failed:", (connect_ec ? connect_ec : accept_ec).message());
    asio::co_spawn(io, respool_cli::run_session(h.svc, *h.w, beast::tcp_stream(std::move(server))),
                   asio::detached);

    std::vector<std::string> pieces;
    if (splits == 0 || input.size() < 2) {
        pieces.push_back(input);
    } else {
        std::size_t from = 0;
        for (unsigned i = 1; i <= splits; ++i) {
            const std::size_t to = input.size() * i / (splits + 1);
            pieces.push_back(input.substr(from, to - from));
            from = to;
        }
        pieces.push_back(input.substr(from));
    }

    std::string received;
    bool done = false;
    std::size_t next = 0;
    std::array<char, 16384> chunk;
    std::function<void()> send_next;
    send_next = [&] {
        if (next == pieces.size()) {
            beast::error_code ignored;
            client.shutdown(tcp::socket::shutdown_send, ignored);
            return;
        }
        const std::string& piece = pieces[next++];
        asio::async_write(client, asio::buffer(piece), [&](beast::error_code ec, std::size_t) {
            if (!ec) send_next();  // a write refused by a closed session: the reads tell the rest
        });
    };
    std::function<void()> read_more;
    read_more = [&] {
        client.async_read_some(asio::buffer(chunk), [&](beast::error_code ec, std::size_t n) {
            received.append(chunk.data(), n);
            if (ec) {
                done = true;
                return;
            }
            read_more();
        });
    };
    send_next();
    read_more();
    asio::steady_timer limit(io, std::chrono::seconds(10));
    bool hung = false;
    limit.async_wait([&](beast::error_code ec) {
        if (!ec) hung = true;
    });
    while (!done && !hung) io.run_one();
    if (hung) fail("the session did not end within 10 s");
    limit.cancel();
    beast::error_code ignored;
    client.close(ignored);
    // Let the session finish (its drain after a refusal reads until our close).
    io.restart();
    while (!h.w->sessions.empty() && io.run_one_for(std::chrono::seconds(5)) > 0) {
    }
    if (!h.w->sessions.empty()) fail("the session outlived its connection");
    io.restart();
    io.poll();
    io.restart();
    check_first(classify(input, pieces), check_responses(received), received);
    return 0;
}
