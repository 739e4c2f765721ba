// A loopback TCP proxy that misbehaves on demand, for fault tests: put it between a client (e.g. a
// pool of pg::connection) and a server (e.g. the pg_cluster_faults PostgreSQL), then add latency,
// throttle, slice, blackhole, reset or stop accepting while the test runs.
//
// It listens on 127.0.0.1 on an ephemeral port (port()) and forwards every accepted connection to the
// target endpoint, which must be a loopback address (no test traffic leaves the machine). It runs on
// an io_context on a thread of its own. Every setter may be called from any thread; it returns once
// the proxy's thread has applied it, so what follows the call in the test sees the new behaviour. A
// behaviour applies to the open connections and to new ones alike, and stays until changed.
//
// Buffering is bounded: each direction of a connection holds at most max_queued_bytes read but not
// yet forwarded (delayed, throttled or blackholed); beyond that the proxy stops reading, so the
// sender's writes block once the kernel's socket buffers are full, as on a slow network.
//
// Both sockets of a connection have TCP_NODELAY, so the proxy's writes reach the peer as written.
#pragma once

#include <boost/asio/ip/tcp.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace test {

class chaos_proxy {
public:
    static constexpr std::size_t max_queued_bytes = 64 * 1024;  // per direction of a connection

    // Starts listening and forwarding at once. Throws std::invalid_argument when `target` is not a
    // loopback address, boost::system::system_error when it cannot listen.
    explicit chaos_proxy(boost::asio::ip::tcp::endpoint target);
    explicit chaos_proxy(std::uint16_t target_port);  // 127.0.0.1:target_port
    ~chaos_proxy();                                   // stop()
    chaos_proxy(const chaos_proxy&) = delete;
    chaos_proxy& operator=(const chaos_proxy&) = delete;

    std::uint16_t port() const;  // where clients connect: 127.0.0.1:port()

    // Every chunk read from either side is forwarded `d` after it was read, in order (a later chunk
    // never overtakes an earlier one, also when `d` shrinks). A request/response round trip takes at
    // least 2 * d. Applies to chunks read after the call; those already held keep their time. 0: none;
    // at most 24 h.
    void set_latency(std::chrono::nanoseconds d);

    // Each direction of each connection forwards at most `bytes_per_second`: a piece of n bytes is
    // written n / bytes_per_second after the previous one (pieces of at most 1/50 s of traffic), so N
    // bytes take at least N / bytes_per_second. 0: unlimited.
    void set_bandwidth(std::size_t bytes_per_second);

    // Every write of the proxy carries 1 byte: the peer receives a message in as many reads as its
    // scheduling lets it see (usually one per byte), exercising partial-message parsing.
    void set_slicing(bool on);

    // When data arrives from either side, the proxy closes both sockets of that connection without
    // forwarding it: the client sees EOF (recv returns 0; a reset instead if more of its data was
    // still unread in the proxy's socket), and so does the server.
    void set_close_on_data(bool on);

    // Every open connection is reset: SO_LINGER 0, then close, on both sockets. The client's next (or
    // pending) read fails with ECONNRESET, as does the server's. New connections are not affected.
    void reset_all();

    // A network partition. New connections are accepted (the client's connect succeeds) but the proxy
    // does not connect to the target; open connections stop forwarding. The proxy keeps reading (up to
    // max_queued_bytes per direction) and answers nothing: the client's reads time out, with the
    // connection still open. A close by either side stays held too. Turning it off heals the partition:
    // held data (and held closes) are forwarded, connections accepted meanwhile connect to the target.
    // A read or write error (a reset) on either socket still ends the connection.
    void set_blackhole(bool on);

    // false: the proxy stops calling accept (the listening socket stays open, so the port stays
    // reserved). The kernel still completes new TCP handshakes into the listen backlog: the client's
    // connect succeeds and its bytes are buffered, but nothing is ever answered (its reads time out)
    // and the target sees no connection; accepted() does not count it. Open connections continue.
    // true: the proxy accepts again, the waiting connections first; they are then served normally.
    void set_accepting(bool on);

    // Plain forwarding: no latency, no bandwidth limit, no slicing, no close on data, no blackhole,
    // accepting. Everything held is forwarded at once (also what a latency still delays).
    void normal();

    std::size_t accepted() const;          // connections accepted since construction
    std::size_t open_connections() const;  // accepted and not closed yet

    // The ports the target sees as the client's (pg_stat_activity.client_port, say) of the connections
    // whose client is still there: connected to the target, and neither closed by the client nor
    // closed or reset by the proxy. A server process serving any other connection of the proxy is
    // ending: its client is gone, and it leaves when it notices. A test counting the server processes
    // a client holds counts those listed here.
    std::vector<std::uint16_t> target_ports_of_live_clients() const;

    // Closes the listening socket and every connection (both sides see EOF, or a reset when data was
    // unread) and joins the proxy's thread. Idempotent; setters called afterwards do nothing.
    void stop();

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace test
