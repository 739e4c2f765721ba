// test::chaos_proxy against a loopback echo server of the test's own (blocking sockets, a thread per
// connection, every read counted). Clients are blocking sockets whose every read is bounded by a
// receive timeout. Timing checks are lower bounds only (a latency of d makes a round trip take at
// least 2 d), never upper bounds; "nothing arrives" is a read that times out after 200 ms while the
// connection stays open, and what was held is then seen to arrive. Every wait is bounded.
#include "chaos_proxy.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using test::chaos_proxy;
using clock_type = std::chrono::steady_clock;

namespace {

bool send_all(int fd, const char* p, std::size_t n) {
    while (n > 0) {
        const ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return false;
        p += k;
        n -= static_cast<std::size_t>(k);
    }
    return true;
}

void set_timeout(int fd, int option, std::chrono::milliseconds t) {
    t = std::max(t, 1ms);  // 0 would mean "no timeout"
    const timeval tv{static_cast<time_t>(t.count() / 1000),
                     static_cast<suseconds_t>(t.count() % 1000 * 1000)};
    ::setsockopt(fd, SOL_SOCKET, option, &tv, sizeof tv);
}

// Echoes every read back at once and records its size, per connection (in accept order).
class echo_server {
public:
    echo_server() {
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), len) != 0 ||
            ::listen(listen_fd_, 16) != 0 ||
            ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
            throw std::runtime_error("echo_server: cannot listen");
        port_ = ntohs(a.sin_port);
        acceptor_ = std::thread([this] { accept_loop(); });
    }
    // shutdown() wakes the blocked accept and every blocked recv/send; the threads then end.
    ~echo_server() {
        ::shutdown(listen_fd_, SHUT_RDWR);
        acceptor_.join();
        {
            std::lock_guard lock(mutex_);
            for (auto& c : conns_) ::shutdown(c->fd, SHUT_RDWR);
        }
        for (auto& c : conns_) c->thread.join();
        for (auto& c : conns_) ::close(c->fd);
        ::close(listen_fd_);
    }
    std::uint16_t port() const { return port_; }
    std::size_t accepted() const {
        std::lock_guard lock(mutex_);
        return conns_.size();
    }
    std::vector<std::size_t> reads(std::size_t connection) const {
        std::lock_guard lock(mutex_);
        return conns_.at(connection)->reads;
    }

private:
    struct conn {
        int fd = -1;
        std::vector<std::size_t> reads;
        std::thread thread;
    };
    void accept_loop() {
        for (;;) {
            const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
            if (fd < 0 && (errno == EINTR || errno == ECONNABORTED)) continue;
            if (fd < 0) return;  // shut down
            std::lock_guard lock(mutex_);
            auto c = std::make_unique<conn>();
            c->fd = fd;
            c->thread = std::thread([this, raw = c.get()] { serve(*raw); });
            conns_.push_back(std::move(c));
        }
    }
    void serve(conn& c) {
        std::vector<char> buf(64 * 1024);
        for (;;) {
            const ssize_t n = ::recv(c.fd, buf.data(), buf.size(), 0);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            {
                std::lock_guard lock(mutex_);
                c.reads.push_back(static_cast<std::size_t>(n));
            }
            if (!send_all(c.fd, buf.data(), static_cast<std::size_t>(n))) break;
        }
        ::shutdown(c.fd, SHUT_WR);  // the peer sees EOF; the descriptor is closed by the destructor
    }

    int listen_fd_ = -1;
    std::uint16_t port_ = 0;
    std::thread acceptor_;
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<conn>> conns_;
};

// A blocking loopback client; connect and sends give up after 5 s, reads after their own limit.
class client {
public:
    explicit client(std::uint16_t port) {
        fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        set_timeout(fd_, SO_SNDTIMEO, 5000ms);  // also bounds connect()
        const int one = 1;
        ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port);
        connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        connect_errno_ = connected_ ? 0 : errno;
    }
    ~client() { ::close(fd_); }
    client(const client&) = delete;
    client& operator=(const client&) = delete;

    bool connected() const { return connected_; }
    int connect_errno() const { return connect_errno_; }
    int fd() const { return fd_; }
    bool send(const std::string& s) { return send_all(fd_, s.data(), s.size()); }

    // One recv bounded by `limit`: n > 0 bytes, 0 for EOF, -1 with err (EAGAIN: nothing came).
    struct outcome {
        ssize_t n = -1;
        int err = 0;
        std::string data;
    };
    outcome recv_once(std::chrono::milliseconds limit) {
        set_timeout(fd_, SO_RCVTIMEO, limit);
        std::string buf(64 * 1024, '\0');
        outcome o;
        do o.n = ::recv(fd_, buf.data(), buf.size(), 0);
        while (o.n < 0 && errno == EINTR);
        o.err = o.n < 0 ? errno : 0;
        if (o.n > 0) o.data = buf.substr(0, static_cast<std::size_t>(o.n));
        return o;
    }
    // Reads until `n` bytes came, EOF, an error, or `limit` passed; returns what came.
    std::string receive(std::size_t n, std::chrono::milliseconds limit = 10s) {
        const auto deadline = clock_type::now() + limit;
        std::string got;
        while (got.size() < n && clock_type::now() < deadline) {
            const auto o =
                recv_once(std::chrono::ceil<std::chrono::milliseconds>(deadline - clock_type::now()));
            if (o.n <= 0) break;
            got += o.data;
        }
        return got;
    }
    std::string round_trip(const std::string& s) { return send(s) ? receive(s.size()) : "<send failed>"; }

private:
    int fd_ = -1;
    bool connected_ = false;
    int connect_errno_ = 0;
};

// Waits on a state of the proxy's thread (a counter); false after `limit`.
bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 10s) {
    const auto deadline = clock_type::now() + limit;
    while (!done()) {
        if (clock_type::now() >= deadline) return false;
        std::this_thread::sleep_for(10ms);
    }
    return true;
}

std::string pattern(std::size_t n) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 26);
    return s;
}

bool timed_out(const client::outcome& o) {
    return o.n < 0 && (o.err == EAGAIN || o.err == EWOULDBLOCK);
}

struct rig {
    echo_server echo;
    chaos_proxy proxy{echo.port()};
};

TEST(chaos_proxy, forwards_both_ways_and_counts_connections) {
    rig r;
    EXPECT_EQ(r.proxy.accepted(), 0u);
    {
        client a(r.proxy.port());
        ASSERT_TRUE(a.connected());
        EXPECT_EQ(a.round_trip("hello"), "hello");
        // The reply went through the proxy: it has accepted and connected by now.
        EXPECT_EQ(r.proxy.accepted(), 1u);
        EXPECT_EQ(r.proxy.open_connections(), 1u);
        EXPECT_EQ(r.echo.accepted(), 1u);
        client b(r.proxy.port());
        EXPECT_EQ(b.round_trip("world"), "world");
        EXPECT_EQ(r.proxy.accepted(), 2u);
        EXPECT_EQ(r.proxy.open_connections(), 2u);

        // More than the proxy holds per direction: reading stops and resumes as the queue drains.
        const std::string big = pattern(4 * 1024 * 1024);
        std::thread sender([&] { EXPECT_TRUE(a.send(big)); });
        EXPECT_TRUE(a.receive(big.size(), 30s) == big);
        sender.join();
    }
    // Both clients closed: the close goes through the echo server and back, then the proxy lets go.
    EXPECT_TRUE(eventually([&] { return r.proxy.open_connections() == 0; }));
    EXPECT_EQ(r.proxy.accepted(), 2u);
}

TEST(chaos_proxy, latency_delays_each_direction_and_keeps_the_order) {
    rig r;
    client a(r.proxy.port());
    ASSERT_EQ(a.round_trip("warm"), "warm");  // connected: only forwarding is measured below
    r.proxy.set_latency(50ms);
    auto t0 = clock_type::now();
    EXPECT_EQ(a.round_trip("ping"), "ping");
    EXPECT_GE(clock_type::now() - t0, 100ms) << "50 ms each way";

    ASSERT_TRUE(a.send("1") && a.send("22") && a.send("333"));
    EXPECT_EQ(a.receive(6), "122333");

    client b(r.proxy.port());  // a new connection is delayed too
    t0 = clock_type::now();
    EXPECT_EQ(b.round_trip("new"), "new");
    EXPECT_GE(clock_type::now() - t0, 100ms);

    r.proxy.set_latency(0ms);
    EXPECT_EQ(a.round_trip("fast"), "fast");
}

TEST(chaos_proxy, bandwidth_bounds_the_time_for_n_bytes) {
    rig r;
    client a(r.proxy.port());
    ASSERT_EQ(a.round_trip("warm"), "warm");
    r.proxy.set_bandwidth(20'000);
    const std::string data = pattern(4000);
    const auto t0 = clock_type::now();
    ASSERT_TRUE(a.send(data));
    EXPECT_TRUE(a.receive(data.size()) == data);
    EXPECT_GE(clock_type::now() - t0, 200ms) << "4000 bytes at 20 kB/s";
    r.proxy.set_bandwidth(0);
    EXPECT_EQ(a.round_trip("free"), "free");
}

TEST(chaos_proxy, slicing_delivers_a_message_in_one_byte_writes) {
    rig r;
    client a(r.proxy.port());
    ASSERT_EQ(a.round_trip("warm"), "warm");
    r.proxy.set_slicing(true);
    // The proxy writes one byte at a time; how many of them the echo server finds per read depends on
    // how soon it runs after each arrives (it reads whatever has come): on a loaded machine it may
    // sleep through a whole message. So: up to 5 messages, each sent in one write (without slicing
    // the proxy reads and writes it whole: one read), until one arrives in several reads; every one
    // arrives complete and in order. The count is printed; "every read is 1 byte" is not a property
    // of the proxy but of the reader's scheduling.
    std::vector<std::size_t> sliced;
    for (int attempt = 0; attempt < 5 && sliced.size() <= 1; ++attempt) {
        const auto before = r.echo.reads(0).size();
        const std::string data = pattern(2000);
        ASSERT_TRUE(a.send(data));
        ASSERT_TRUE(a.receive(data.size()) == data) << "the bytes arrive complete and in order";
        const auto all = r.echo.reads(0);
        sliced.assign(all.begin() + static_cast<long>(before), all.end());
        EXPECT_EQ(std::accumulate(sliced.begin(), sliced.end(), std::size_t{0}), data.size());
    }
    EXPECT_GT(sliced.size(), 1u);
    std::cout << "[ info     ] 2000 bytes sliced: " << sliced.size() << " reads at the echo server, "
              << std::count(sliced.begin(), sliced.end(), std::size_t{1}) << " of 1 byte, largest "
              << *std::max_element(sliced.begin(), sliced.end()) << " bytes\n";
    r.proxy.set_slicing(false);
    EXPECT_EQ(a.round_trip("whole"), "whole");
}

TEST(chaos_proxy, close_on_data_closes_instead_of_forwarding) {
    rig r;
    client a(r.proxy.port());
    ASSERT_EQ(a.round_trip("warm"), "warm");
    r.proxy.set_close_on_data(true);
    ASSERT_TRUE(a.send("x"));
    EXPECT_EQ(a.recv_once(10s).n, 0) << "EOF";
    EXPECT_TRUE(eventually([&] { return r.proxy.open_connections() == 0; }));
    const auto reads = r.echo.reads(0);
    EXPECT_EQ(std::accumulate(reads.begin(), reads.end(), std::size_t{0}), 4u)
        << "only \"warm\" reached the server";

    client b(r.proxy.port());  // a new connection too
    ASSERT_TRUE(b.send("y"));
    EXPECT_EQ(b.recv_once(10s).n, 0);
}

TEST(chaos_proxy, reset_all_resets_every_connection) {
    rig r;
    client a(r.proxy.port()), b(r.proxy.port());
    ASSERT_EQ(a.round_trip("a"), "a");
    ASSERT_EQ(b.round_trip("b"), "b");
    r.proxy.reset_all();
    EXPECT_EQ(r.proxy.open_connections(), 0u);
    for (client* c : {&a, &b}) {
        const auto o = c->recv_once(10s);
        EXPECT_EQ(o.n, -1);
        EXPECT_EQ(o.err, ECONNRESET) << std::strerror(o.err);
    }
    client c(r.proxy.port());  // new connections are served
    EXPECT_EQ(c.round_trip("c"), "c");
}

TEST(chaos_proxy, blackhole_answers_nothing_until_it_ends) {
    rig r;
    client a(r.proxy.port());
    ASSERT_EQ(a.round_trip("warm"), "warm");
    r.proxy.set_blackhole(true);
    ASSERT_TRUE(a.send("held"));
    EXPECT_TRUE(timed_out(a.recv_once(200ms))) << "nothing comes back, and the connection is open";

    client b(r.proxy.port());  // accepted, but not connected to the server
    ASSERT_TRUE(b.connected());
    ASSERT_TRUE(eventually([&] { return r.proxy.accepted() == 2; }));
    ASSERT_TRUE(b.send("b"));
    EXPECT_TRUE(timed_out(b.recv_once(200ms)));
    EXPECT_EQ(r.echo.accepted(), 1u);
    EXPECT_EQ(r.proxy.open_connections(), 2u);

    r.proxy.set_blackhole(false);  // healed: what was held arrives
    EXPECT_EQ(a.receive(4), "held");
    EXPECT_EQ(b.receive(1), "b");
    EXPECT_EQ(r.echo.accepted(), 2u);
}

TEST(chaos_proxy, blackhole_buffers_a_bounded_amount) {
    rig r;
    client a(r.proxy.port());
    ASSERT_EQ(a.round_trip("warm"), "warm");
    r.proxy.set_blackhole(true);
    // Send until the socket stays unwritable for 200 ms: the proxy stopped reading and the kernel
    // buffers are full. An unbounded proxy would take all 64 MiB.
    constexpr std::size_t limit = 64 * 1024 * 1024;
    const std::string chunk = pattern(64 * 1024);
    std::size_t sent = 0;
    while (sent < limit) {
        const ssize_t n = ::send(a.fd(), chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            sent += static_cast<std::size_t>(n);
            continue;
        }
        ASSERT_TRUE(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            << std::strerror(errno);
        pollfd p{a.fd(), POLLOUT, 0};
        if (::poll(&p, 1, 200) == 0) break;
    }
    EXPECT_LT(sent, limit);
    std::cout << "[ info     ] blackholed: " << sent / 1024
              << " KiB taken before the client's sends blocked\n";
}

TEST(chaos_proxy, not_accepting_leaves_new_connections_unserved_while_old_ones_continue) {
    rig r;
    client a(r.proxy.port());
    ASSERT_EQ(a.round_trip("warm"), "warm");
    r.proxy.set_accepting(false);

    client b(r.proxy.port());  // the kernel completes the handshake into the backlog
    ASSERT_TRUE(b.connected()) << std::strerror(b.connect_errno());
    ASSERT_TRUE(b.send("b"));
    EXPECT_TRUE(timed_out(b.recv_once(200ms))) << "not served";
    EXPECT_EQ(r.proxy.accepted(), 1u);
    EXPECT_EQ(r.echo.accepted(), 1u);
    EXPECT_EQ(a.round_trip("still"), "still") << "the open connection continues";

    r.proxy.set_accepting(true);  // the waiting connection is accepted and served
    EXPECT_EQ(b.receive(1), "b");
    EXPECT_EQ(r.proxy.accepted(), 2u);
}

TEST(chaos_proxy, normal_forwards_what_was_held_and_plainly_after) {
    rig r;
    client a(r.proxy.port());
    ASSERT_EQ(a.round_trip("warm"), "warm");
    r.proxy.set_latency(1h);
    r.proxy.set_bandwidth(1);
    r.proxy.set_slicing(true);
    ASSERT_TRUE(a.send("late"));
    EXPECT_TRUE(timed_out(a.recv_once(200ms)));
    r.proxy.normal();
    EXPECT_EQ(a.receive(4), "late");
    r.proxy.set_close_on_data(true);
    r.proxy.set_blackhole(true);
    r.proxy.set_accepting(false);
    r.proxy.normal();
    EXPECT_EQ(a.round_trip("plain"), "plain");
    client b(r.proxy.port());
    EXPECT_EQ(b.round_trip("new"), "new");
}

TEST(chaos_proxy, a_refusing_target_closes_the_client) {
    std::uint16_t closed_port = 0;
    {
        echo_server gone;  // a loopback port that was just listened on and no longer is
        closed_port = gone.port();
    }
    chaos_proxy proxy(closed_port);
    client a(proxy.port());
    ASSERT_TRUE(a.connected());
    EXPECT_EQ(a.recv_once(10s).n, 0) << "EOF once the proxy's connect is refused";
    EXPECT_TRUE(eventually([&] { return proxy.open_connections() == 0; }));
}

TEST(chaos_proxy, refuses_a_target_off_the_loopback) {
    namespace ip = boost::asio::ip;
    EXPECT_THROW(chaos_proxy(ip::tcp::endpoint(ip::make_address("192.0.2.1"), 5432)), std::invalid_argument);
    EXPECT_THROW(chaos_proxy(ip::tcp::endpoint(ip::make_address("0.0.0.0"), 5432)), std::invalid_argument);
    EXPECT_NO_THROW(chaos_proxy(ip::tcp::endpoint(ip::make_address("::1"), 5432)));
    EXPECT_NO_THROW(chaos_proxy(ip::tcp::endpoint(ip::make_address("127.0.0.2"), 5432)));
}

TEST(chaos_proxy, stop_closes_everything_and_is_idempotent) {
    rig r;
    client a(r.proxy.port());
    ASSERT_EQ(a.round_trip("warm"), "warm");
    const auto port = r.proxy.port();
    r.proxy.stop();
    EXPECT_EQ(a.recv_once(10s).n, 0) << "EOF";
    EXPECT_EQ(r.proxy.open_connections(), 0u);
    client late(port);
    EXPECT_FALSE(late.connected());
    EXPECT_EQ(late.connect_errno(), ECONNREFUSED) << std::strerror(late.connect_errno());
    r.proxy.stop();
    r.proxy.set_latency(1ms);  // ignored, and does not wait for the stopped thread
    r.proxy.reset_all();
}

}  // namespace
