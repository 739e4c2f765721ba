// `respool serve` and HTTP/1.1 message framing (RFC 9112 §6): the request-smuggling corpus sent by a raw
// TCP client to the real process. A request whose length a server and a proxy in front of it could
// read differently (CL.TE, TE.CL, TE.TE obfuscations, conflicting or malformed Content-Lengths, folded
// or oddly spaced framing headers) is answered 400 (501 for a transfer coding the service does not
// decode, 413 for a length over the body limit) with Connection: close, and the connection ends there:
// the request hidden in its body never runs, which a fresh connection shows (nothing was stored). The
// legal spellings (upper-case CHUNKED, a tab before the value, equal Content-Lengths, leading zeros,
// chunk extensions, trailers) work.
#include "serve_support.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

using namespace serve_test;
using namespace std::chrono_literals;

namespace {

// A service on a fresh SQLite file. A short idle timeout: a server that wrongly keeps such a
// connection open closes it soon, and the test reads what it served instead of waiting for a minute.
struct service {
    service() {
        process.emplace(std::vector<std::string>{"serve", "--db", "sqlite:" + dir.path + "/kv.db", "--listen",
                                                 "127.0.0.1:0", "--idle-timeout", "1s"});
        port = process->wait_listening();
    }
    temp_dir dir;
    std::optional<serve_process> process;
    std::uint16_t port = 0;
};

// What follows the framing headers: the request to smuggle is placed where a reading of the framing
// that is not the sender's would take it for the next request.
enum class body_kind {
    smuggled,            // right after the header: a server that sees no body runs it
    after_last_chunk,    // after "0\r\n\r\n": a server that decodes chunked runs it
    after_five_bytes,    // after "hello": a server that takes Content-Length: 5 runs it
    after_wrapped_size,  // after a chunk size of 2^64 and a blank line: one that wraps it to 0 runs it
    raw,                 // `extra` alone (a broken chunk size, say)
};

struct refusal_case {
    std::string name;
    std::string framing;  // header lines, each ending in CRLF
    body_kind body;
    unsigned status;
    std::string extra = {};
    std::string version = "HTTP/1.1";
};

std::string smuggled_request(const std::string& key) {
    return "PUT /kv/" + key + " HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nbad";
}

std::string attack(const refusal_case& c, const std::string& front, const std::string& smuggled) {
    std::string out = "PUT /kv/" + front + " " + c.version + "\r\nHost: x\r\n" + c.framing + "\r\n";
    switch (c.body) {
    case body_kind::smuggled: return out + smuggled_request(smuggled);
    case body_kind::after_last_chunk: return out + "0\r\n\r\n" + smuggled_request(smuggled);
    case body_kind::after_five_bytes: return out + "hello" + smuggled_request(smuggled);
    case body_kind::after_wrapped_size: return out + "10000000000000000\r\n\r\n" + smuggled_request(smuggled);
    case body_kind::raw: return out + c.extra;
    }
    return out;
}

}  // namespace

TEST(serve_framing, ambiguous_framing_is_refused_with_close_and_the_smuggled_request_never_runs) {
    using enum body_kind;
    const std::vector<refusal_case> cases{
        // Transfer codings the service does not decode, alone or last: the body's length is unknown.
        {"TE gzip", "Transfer-Encoding: gzip\r\n", smuggled, 400},
        {"TE chunked, gzip", "Transfer-Encoding: chunked, gzip\r\n", smuggled, 400},
        {"TE chunked, identity", "Transfer-Encoding: chunked, identity\r\n", smuggled, 400},
        {"TE chunked, chunked", "Transfer-Encoding: chunked, chunked\r\n", smuggled, 400},
        {"TE xchunked", "Transfer-Encoding: xchunked\r\n", smuggled, 400},
        {"TE empty", "Transfer-Encoding: \r\n", smuggled, 400},
        {"TE quoted", "Transfer-Encoding: \"chunked\"\r\n", smuggled, 400},
        {"TE chunked with a parameter", "Transfer-Encoding: chunked;q=1\r\n", after_last_chunk, 400},
        // A coding the service does not decode before chunked: the length is known, the content is not.
        {"TE gzip, chunked", "Transfer-Encoding: gzip, chunked\r\n", after_last_chunk, 501},
        {"TE identity, chunked", "Transfer-Encoding: identity, chunked\r\n", after_last_chunk, 501},
        {"TE x then TE chunked", "Transfer-Encoding: x\r\nTransfer-Encoding: chunked\r\n", after_last_chunk,
         501},
        // CL.TE and TE.CL: both headers, in either order.
        {"CL.TE", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", after_last_chunk, 400},
        {"TE.CL", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", after_last_chunk, 400},
        {"TE gzip and CL", "Transfer-Encoding: gzip\r\nContent-Length: 5\r\n", after_five_bytes, 400},
        {"CL and TE gzip", "Content-Length: 5\r\nTransfer-Encoding: gzip\r\n", after_five_bytes, 400},
        {"CL and TE tab chunked", "Content-Length: 5\r\nTransfer-Encoding:\tchunked\r\n", after_five_bytes,
         400},
        // TE.TE obfuscations.
        {"TE twice", "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", after_last_chunk, 400},
        {"TE chunked then TE x", "Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n", after_last_chunk,
         400},
        {"space before the colon", "Transfer-Encoding : chunked\r\n", after_last_chunk, 400},
        {"vertical tab before the value",
         "Transfer-Encoding:\x0b"
         "chunked\r\n",
         after_last_chunk, 400},
        {"obs-fold before the value", "Transfer-Encoding:\r\n chunked\r\n", after_last_chunk, 400},
        {"obs-fold with a tab", "Transfer-Encoding:\r\n\tchunked\r\n", after_last_chunk, 400},
        {"obs-fold adding a coding", "Transfer-Encoding: gzip\r\n , chunked\r\n", after_last_chunk, 400},
        {"obs-fold in Content-Length", "Content-Length:\r\n 5\r\n", after_five_bytes, 400},
        {"obs-fold in another header", "X-Note: one\r\n two\r\nTransfer-Encoding: chunked\r\n",
         after_last_chunk, 400},
        {"TE in HTTP/1.0", "Transfer-Encoding: chunked\r\n", after_last_chunk, 400, {}, "HTTP/1.0"},
        // Content-Length: conflicting, signed, spaced, too large for 64 bits, or over the body limit.
        {"CL 5 and CL 6", "Content-Length: 5\r\nContent-Length: 6\r\n", after_five_bytes, 400},
        {"CL list 5, 6", "Content-Length: 5, 6\r\n", after_five_bytes, 400},
        {"CL +5", "Content-Length: +5\r\n", after_five_bytes, 400},
        {"CL 1 0", "Content-Length: 1 0\r\n", after_five_bytes, 400},
        {"CL -5", "Content-Length: -5\r\n", smuggled, 400},
        {"CL over 64 bits", "Content-Length: 99999999999999999999\r\n", smuggled, 400},
        {"CL 2^64-1", "Content-Length: 18446744073709551615\r\n", smuggled, 413},
        // Chunk sizes: past 64 bits, over the body limit, not hexadecimal, a broken extension.
        {"chunk size over 64 bits", "Transfer-Encoding: chunked\r\n", after_wrapped_size, 400},
        {"chunk size 2^64-1", "Transfer-Encoding: chunked\r\n", raw, 413,
         "ffffffffffffffff\r\nabc\r\n0\r\n\r\n"},
        {"chunk size not hex", "Transfer-Encoding: chunked\r\n", raw, 400, "3x\r\nabc\r\n0\r\n\r\n"},
        {"chunk extension without a name", "Transfer-Encoding: chunked\r\n", raw, 400,
         "3;\r\nabc\r\n0\r\n\r\n"},
    };

    service s;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const refusal_case& c = cases[i];
        SCOPED_TRACE(c.name);
        const std::string front = "front-" + std::to_string(i), hidden = "smuggled-" + std::to_string(i);
        const conversation got = converse(s.port, attack(c, front, hidden));
        ASSERT_GE(got.responses.size(), 1u) << "received: " << got.trailing;
        EXPECT_EQ(got.responses[0].status, c.status) << got.responses[0].body;
        EXPECT_EQ(got.responses[0].header("connection"), "close");
        EXPECT_EQ(got.responses[0].header("content-type"), "application/json");
        EXPECT_EQ(got.responses.size(), 1u)
            << "a response after the refusal: " << got.responses.back().status;
        EXPECT_EQ(got.trailing, "");
        EXPECT_TRUE(got.closed) << "the connection stayed open";
        // Nothing ran: neither the refused request nor the one in its body stored anything.
        client fresh(s.port);
        EXPECT_EQ(fresh.request("GET", "/kv/" + front).status, 404u);
        EXPECT_EQ(fresh.request("GET", "/kv/" + hidden).status, 404u);
    }
    // The service is unharmed.
    client after(s.port);
    EXPECT_EQ(after.request("GET", "/health").status, 200u);
}

TEST(serve_framing, legal_spellings_of_the_framing_headers_work) {
    struct legal_case {
        std::string name;
        std::string framing;
        std::string body;
        std::string value;  // what the PUT stores
    };
    const std::vector<legal_case> cases{
        {"upper-case CHUNKED", "Transfer-Encoding: CHUNKED\r\n", "3\r\nabc\r\n0\r\n\r\n", "abc"},
        {"mixed-case Chunked", "Transfer-Encoding: Chunked\r\n", "3\r\nabc\r\n0\r\n\r\n", "abc"},
        {"a tab before the value", "Transfer-Encoding:\tchunked\r\n", "3\r\nabc\r\n0\r\n\r\n", "abc"},
        {"spaces after the value", "Transfer-Encoding: chunked  \r\n", "3\r\nabc\r\n0\r\n\r\n", "abc"},
        {"empty list elements", "Transfer-Encoding: , chunked\r\n", "3\r\nabc\r\n0\r\n\r\n", "abc"},
        {"chunk extensions", "Transfer-Encoding: chunked\r\n",
         "3;name=value;flag\r\nabc\r\n0;last=\"q\"\r\n\r\n", "abc"},
        {"trailers", "Transfer-Encoding: chunked\r\n", "3\r\nabc\r\n0\r\nX-Checksum: 1\r\nX-Other: 2\r\n\r\n",
         "abc"},
        {"chunk size with leading zeros", "Transfer-Encoding: chunked\r\n", "0003\r\nabc\r\n00\r\n\r\n",
         "abc"},
        {"Content-Length twice, equal", "Content-Length: 5\r\nContent-Length: 5\r\n", "hello", "hello"},
        {"Content-Length list, equal", "Content-Length: 5, 5\r\n", "hello", "hello"},
        {"Content-Length with leading zeros", "Content-Length: 005\r\n", "hello", "hello"},
    };
    service s;
    for (std::size_t i = 0; i < cases.size(); ++i) {
        const legal_case& c = cases[i];
        SCOPED_TRACE(c.name);
        const std::string key = "legal-" + std::to_string(i);
        // The PUT, then a GET on the same connection: the body ended where its framing says.
        const conversation got =
            converse(s.port, "PUT /kv/" + key + " HTTP/1.1\r\nHost: x\r\n" + c.framing + "\r\n" + c.body +
                                 "GET /kv/" + key + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        ASSERT_EQ(got.responses.size(), 2u) << "received: " << got.trailing;
        EXPECT_EQ(got.responses[0].status, 204u) << got.responses[0].body;
        EXPECT_EQ(got.responses[1].status, 200u);
        EXPECT_EQ(got.responses[1].body, c.value);
        EXPECT_EQ(got.trailing, "");
        EXPECT_TRUE(got.closed);
    }
}

TEST(serve_framing, a_refusal_names_what_is_wrong) {
    struct named_case {
        std::string framing;
        std::string body;  // the JSON body expected
    };
    const std::vector<named_case> cases{
        {"Transfer-Encoding: gzip\r\n",
         R"({"error":"bad_request","message":"the last transfer coding must be chunked"})"},
        {"Transfer-Encoding: chunked, chunked\r\n",
         R"({"error":"bad_request","message":"chunked may be applied only once"})"},
        {"Transfer-Encoding: gzip\r\nContent-Length: 5\r\n",
         R"({"error":"bad_request","message":"Transfer-Encoding and Content-Length in one request"})"},
        {"Transfer-Encoding: gzip, chunked\r\n",
         R"({"error":"not_implemented","message":"the only transfer coding decoded is chunked"})"},
        {"Content-Length: 5\r\nContent-Length: 6\r\n",
         R"({"error":"bad_request","message":"malformed HTTP request: multiple Content-Length"})"},
        {"Transfer-Encoding:\r\n chunked\r\n",
         R"({"error":"bad_request","message":"malformed HTTP request: bad obs-fold"})"},
    };
    service s;
    for (const auto& c : cases) {
        SCOPED_TRACE(c.framing);
        const conversation got = converse(s.port, "PUT /kv/k HTTP/1.1\r\nHost: x\r\n" + c.framing + "\r\n");
        ASSERT_EQ(got.responses.size(), 1u);
        EXPECT_EQ(got.responses[0].body, c.body);
    }
}
