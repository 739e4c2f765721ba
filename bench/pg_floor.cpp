// The floor under respool::pg: what a client on one Asio event loop spends a `SELECT 1` when nothing
// but the statement stands between the coroutine and the server. Two floors, no respool code in
// either:
//   libpq  each coroutine owns a PGconn: PQsendQueryPrepared, then PQisBusy / PQgetResult, waiting for
//          the socket to be readable and reading it (PQconsumeInput) after each wait, the way respool's
//          statements read a reply (what a libpq client pays). The wait is a one-byte receive with
//          MSG_PEEK, as respool's (--wait peek), or Asio's async_wait (--wait async_wait: an epoll_ctl
//          at every wait). With --read-ahead 1 the socket is also read once right after the send,
//          before the first wait: a reply already there saves the wait.
//   wire   each coroutine speaks the extended protocol itself on the connection's socket: one write of
//          Bind/Execute/Sync for the prepared statement, reads until ReadyForQuery (what a client
//          with its own protocol code pays; libpq only connects and prepares; refused on an encrypted
//          connection, whose bytes libpq's TLS or GSSAPI layer must carry).
// bench/pg_compare --ladder runs both next to respool_pg_bench (a connection per coroutine, then the
// pool) and pgbench, so the step each layer adds is measured in one sitting.
//
//   respool_pg_floor --conninfo STR --mode libpq|wire [--seconds S] [--connections N] [--read-ahead 1]
//                    [--wait peek|async_wait]
// Prints one line in respool_pg_bench's format (waits: the readiness waits a statement, libpq mode):
//   floor mode=libpq connections=8 queries=123456 failures=0 seconds=5.00 qps=24691.2 waits_per_query=1.00
//         cpu_us_per_query=5.2 user_us_per_query=0.9 sys_us_per_query=4.3
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "process_cpu.hpp"

#include <libpq-fe.h>
#include <sys/socket.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace asio = boost::asio;

namespace {

using socket_type = asio::generic::stream_protocol::socket;

constexpr const char* statement_name = "floor_select1";

// One protocol message: its type byte, then its length (itself included) in network order, then `body`.
void append_message(std::string& out, char type, const std::string& body) {
    const auto length = static_cast<std::uint32_t>(body.size() + 4);
    out += type;
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((length >> shift) & 0xff);
    out += body;
}

// Bind (unnamed portal, the prepared statement, no parameters, text results), Execute (all rows), Sync.
std::string bind_execute_sync() {
    std::string out;
    std::string bind;
    bind += '\0';  // the unnamed portal
    bind += statement_name;
    bind += '\0';
    bind.append(6, '\0');  // no parameter formats, no parameters, no result formats (all text)
    append_message(out, 'B', bind);
    append_message(out, 'E', std::string(5, '\0'));  // the unnamed portal, no row limit
    append_message(out, 'S', "");
    return out;
}

struct run_state {
    bool running = true;
    std::uint64_t queries = 0;
    std::uint64_t failures = 0;
    std::uint64_t waits = 0;  // readiness waits (libpq mode)
};

std::uint32_t read_length(const char* p) {
    return (std::uint32_t{static_cast<unsigned char>(p[0])} << 24) |
           (std::uint32_t{static_cast<unsigned char>(p[1])} << 16) |
           (std::uint32_t{static_cast<unsigned char>(p[2])} << 8) |
           std::uint32_t{static_cast<unsigned char>(p[3])};
}

// wire: the statement's bytes written at once (the socket is writable: nothing else is in flight), then
// the reply read and walked message by message until ReadyForQuery; the one DataRow must hold "1".
// Bytes after a ReadyForQuery (a message the server sent on its own) stay for the next statement's
// walk; the buffer grows for a message longer than it.
asio::awaitable<void> wire_client(socket_type& socket, const std::string& request, run_state& st) {
    std::vector<char> buf(8192);
    std::size_t have = 0;
    while (st.running) {
        boost::system::error_code ec;
        asio::write(socket, asio::buffer(request), ec);
        if (ec) {
            ++st.failures;
            co_return;
        }
        bool ready = false, one = false, error = false;
        while (!ready) {
            if (have == buf.size()) buf.resize(buf.size() * 2);
            auto [rec, n] = co_await socket.async_read_some(
                asio::buffer(buf.data() + have, buf.size() - have), asio::as_tuple(asio::deferred));
            if (rec) {
                ++st.failures;
                co_return;
            }
            have += n;
            std::size_t at = 0;
            while (!ready && have - at >= 5) {
                const std::uint32_t length = read_length(buf.data() + at + 1);
                if (have - at < 1 + std::size_t{length}) break;
                const char type = buf[at];
                // DataRow: int16 column count, int32 field length, the field.
                if (type == 'D') one = length == 4 + 2 + 4 + 1 && buf[at + 11] == '1';
                if (type == 'E') error = true;
                if (type == 'Z') ready = true;
                at += 1 + length;
            }
            std::memmove(buf.data(), buf.data() + at, have - at);
            have -= at;
        }
        if (!st.running) break;
        if (one && !error)
            ++st.queries;
        else
            ++st.failures;
    }
}

// libpq: the same statement through libpq's asynchronous calls.
// Until the socket is readable: a one-byte peek (respool's way: tried at once, else queued on the
// descriptor's standing registration) or async_wait (re-armed with an epoll_ctl each time). The end of
// the stream counts as readable: PQconsumeInput says what happened.
asio::awaitable<boost::system::error_code> readable(socket_type& socket, bool peek) {
    if (!peek) {
        auto [ec] = co_await socket.async_wait(socket_type::wait_read, asio::as_tuple(asio::deferred));
        co_return ec;
    }
    char byte = 0;
    auto [ec, n] = co_await socket.async_receive(asio::buffer(&byte, 1), socket_type::message_peek,
                                                 asio::as_tuple(asio::deferred));
    co_return ec == asio::error::eof ? boost::system::error_code() : ec;
}

asio::awaitable<void> libpq_client(PGconn* c, socket_type& socket, bool read_ahead, bool peek,
                                   run_state& st) {
    using wait = socket_type::wait_type;
    while (st.running) {
        if (!PQsendQueryPrepared(c, statement_name, 0, nullptr, nullptr, nullptr, 0)) {
            ++st.failures;
            co_return;
        }
        int flushed = 0;  // nonblocking: 1 while some of the request is still to go
        while ((flushed = PQflush(c)) == 1) {
            auto [ec] = co_await socket.async_wait(wait::wait_write, asio::as_tuple(asio::deferred));
            if (ec || !PQconsumeInput(c)) break;
        }
        if (flushed != 0 || (read_ahead && !PQconsumeInput(c))) {
            ++st.failures;
            co_return;
        }
        bool one = false;
        for (;;) {
            if (PQisBusy(c)) {
                ++st.waits;
                const boost::system::error_code ec = co_await readable(socket, peek);
                if (ec || !PQconsumeInput(c)) {
                    ++st.failures;
                    co_return;
                }
                continue;
            }
            PGresult* r = PQgetResult(c);
            if (!r) break;
            one = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
                  std::strcmp(PQgetvalue(r, 0, 0), "1") == 0;
            PQclear(r);
        }
        if (!st.running) break;
        if (one)
            ++st.queries;
        else
            ++st.failures;
    }
}

struct settings {
    std::string conninfo;
    std::string mode;
    double seconds = 10;
    std::size_t connections = 8;
    bool read_ahead = false;    // libpq mode: read the socket once right after the send
    std::string wait = "peek";  // libpq mode: how a reply is waited for
};

settings parse(int argc, char** argv) {
    settings s;
    CLI::App app(
        "respool_pg_floor: a SELECT 1 loop on Asio with no respool code (libpq, or the wire protocol)");
    app.add_option("--conninfo", s.conninfo, "libpq connection string")->required();
    app.add_option("--mode", s.mode, "libpq or wire")->required()->check(CLI::IsMember({"libpq", "wire"}));
    app.add_option("--seconds", s.seconds, "the timed window")->check(CLI::PositiveNumber);
    app.add_option("--connections", s.connections, "connections, one coroutine each")
        ->check(CLI::PositiveNumber);
    app.add_option("--read-ahead", s.read_ahead,
                   "libpq mode: 1 to read the socket once right after the send");
    app.add_option("--wait", s.wait,
                   "libpq mode: peek (a one-byte MSG_PEEK receive, as respool) or async_wait")
        ->check(CLI::IsMember({"peek", "async_wait"}));
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        std::exit(app.exit(e));
    }
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    const settings s = parse(argc, argv);
    asio::io_context io(1);
    std::vector<std::unique_ptr<PGconn, decltype(&PQfinish)>> conns;
    std::vector<std::unique_ptr<socket_type>> sockets;
    for (std::size_t i = 0; i < s.connections; ++i) {
        conns.emplace_back(PQconnectdb(s.conninfo.c_str()), &PQfinish);
        PGconn* c = conns.back().get();
        if (PQstatus(c) != CONNECTION_OK) {
            std::fprintf(stderr, "respool_pg_floor: connect failed: %s", PQerrorMessage(c));
            return 1;
        }
        PGresult* prepared = PQprepare(c, statement_name, "SELECT 1", 0, nullptr);
        const bool ok = PQresultStatus(prepared) == PGRES_COMMAND_OK;
        PQclear(prepared);
        if (!ok) {
            std::fprintf(stderr, "respool_pg_floor: PREPARE failed: %s", PQerrorMessage(c));
            return 1;
        }
        if (PQsetnonblocking(c, 1) != 0) {
            std::fprintf(stderr, "respool_pg_floor: nonblocking mode refused: %s", PQerrorMessage(c));
            return 1;
        }
        if (s.mode == "wire" && (PQsslInUse(c) || PQgssEncInUse(c))) {
            std::fprintf(stderr,
                         "respool_pg_floor: --mode wire needs an unencrypted connection (sslmode=disable, "
                         "gssencmode=disable): its bytes would bypass TLS or GSSAPI\n");
            return 2;
        }
        // A duplicate of the socket: the descriptor object closes its own, libpq keeps its.
        const int fd = ::dup(PQsocket(c));
        if (fd < 0) {
            std::fprintf(stderr, "respool_pg_floor: dup of the socket failed: %s\n", std::strerror(errno));
            return 1;
        }
        sockaddr_storage address{};
        socklen_t length = sizeof address;
        if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
            std::fprintf(stderr, "respool_pg_floor: getsockname failed: %s\n", std::strerror(errno));
            return 1;
        }
        sockets.push_back(
            std::make_unique<socket_type>(io, asio::generic::stream_protocol(address.ss_family, 0), fd));
    }

    run_state st;
    const std::string request = bind_execute_sync();
    bench::process_cpu cpu0, cpu1;
    std::chrono::steady_clock::time_point t0, t1;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            t0 = std::chrono::steady_clock::now();
            cpu0 = bench::process_cpu::now();
            for (std::size_t i = 0; i < s.connections; ++i) {
                if (s.mode == "wire")
                    asio::co_spawn(io, wire_client(*sockets[i], request, st), asio::detached);
                else
                    asio::co_spawn(
                        io, libpq_client(conns[i].get(), *sockets[i], s.read_ahead, s.wait == "peek", st),
                        asio::detached);
            }
            asio::steady_timer t(io, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::duration<double>(s.seconds)));
            co_await t.async_wait(asio::use_awaitable);
            st.running = false;
            t1 = std::chrono::steady_clock::now();
            cpu1 = bench::process_cpu::now();
        },
        asio::detached);
    io.run();
    const double secs = std::chrono::duration<double>(t1 - t0).count();
    std::printf(
        "floor mode=%s connections=%zu queries=%llu failures=%llu seconds=%.2f qps=%.1f waits_per_query=%.2f",
        s.mode.c_str(), s.connections, static_cast<unsigned long long>(st.queries),
        static_cast<unsigned long long>(st.failures), secs, static_cast<double>(st.queries) / secs,
        st.queries ? static_cast<double>(st.waits) / static_cast<double>(st.queries) : 0.0);
    bench::print_cpu_per_query(cpu0, cpu1, st.queries);
    std::printf("\n");
    return st.failures == 0 ? 0 : 1;
}
