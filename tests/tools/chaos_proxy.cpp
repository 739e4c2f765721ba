// The chaos proxy's machinery. Everything but the counters lives on the proxy's thread: the setters
// hand their change to it (proxy_core::apply) and wait, so no state is shared between threads and a
// setter's effect is in place when it returns.
//
// A connection is two pipes (client -> server, server -> client). A pipe reads from one socket into
// a queue of held chunks (each with the time it may leave: read time + latency) and writes the front
// chunk to the other socket, in pieces (1 byte when slicing, 1/50 s of traffic under a bandwidth
// limit), each piece no earlier than its time. A close read from one side is a chunk too, forwarded
// in order as a shutdown of the other side's sending direction; the connection ends when both
// directions have been closed this way, or at once on an error (forwarded as a reset).
#include "chaos_proxy.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace test {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;

constexpr std::size_t read_size = 16 * 1024;
constexpr std::size_t pieces_per_second = 50;  // the granularity of the bandwidth limit

struct behaviour {
    clock_type::duration latency{};
    std::size_t bandwidth = 0;
    bool slicing = false;
    bool close_on_data = false;
    bool blackhole = false;
    bool accepting = true;
};

struct chunk {
    std::vector<char> data;  // empty for a close
    std::size_t offset = 0;  // bytes of data already written
    clock_type::time_point due;
    bool eof = false;
};

// One direction of a connection.
struct pipe {
    pipe(tcp::socket& f, tcp::socket& t, asio::io_context& io)
        : from(f), to(t), timer(io), buffer(read_size) {}
    tcp::socket& from;
    tcp::socket& to;
    asio::steady_timer timer;  // until the next piece may be written
    std::vector<char> buffer;  // of the read under way
    std::deque<chunk> held;
    std::size_t held_bytes = 0;
    bool reading = false;
    bool read_eof = false;
    bool writing = false;
    bool waiting = false;                            // on the timer
    bool write_eof = false;                          // the close was forwarded
    std::optional<clock_type::time_point> piece_at;  // the next piece: when, and how many bytes
    std::size_t piece_size = 0;
    clock_type::time_point link_free{};  // under a bandwidth limit: when the last piece was written
};

class connection;

struct proxy_core {
    explicit proxy_core(tcp::endpoint t);

    void accept();
    void on_accepted(error_code ec, tcp::socket s);
    void remove(connection& c);
    void for_each_connection(const std::function<void(connection&)>& f);
    void apply(const std::function<void()>& change);  // on the proxy's thread; waits for it
    void shutdown();

    asio::io_context io;
    const tcp::endpoint target;
    tcp::acceptor acceptor{io};
    asio::steady_timer accept_retry{io};
    std::uint16_t port = 0;
    behaviour b;  // the proxy's thread only
    bool accept_pending = false;
    bool stopping = false;
    std::unordered_map<connection*, std::shared_ptr<connection>> connections;
    std::atomic<std::size_t> accepted{0};
    std::atomic<std::size_t> open{0};
    asio::executor_work_guard<asio::io_context::executor_type> work{io.get_executor()};
    std::mutex control_mutex;  // orders setters and stop()
    bool stopped = false;      // under control_mutex
    std::thread thread;
};

class connection : public std::enable_shared_from_this<connection> {
public:
    connection(proxy_core& core, tcp::socket client)
        : core_(core),
          client_(std::move(client)),
          server_(core.io),
          up_(client_, server_, core.io),
          down_(server_, client_, core.io) {}

    void start() {
        error_code ec;
        client_.set_option(tcp::no_delay(true), ec);
        if (!core_.b.blackhole) connect_target();
        read(up_);
    }

    // The behaviour changed: pieces are sized and timed again, held data may leave, a connection
    // accepted during a blackhole may connect.
    void kick() {
        if (closed_) return;
        if (!core_.b.blackhole && !connected_ && !connecting_) connect_target();
        for (pipe* p : {&up_, &down_}) {
            p->piece_at.reset();
            if (p->waiting) p->timer.cancel();  // its handler writes again
            write(*p);
        }
    }

    // normal(): what is held leaves now, whatever latency it was read under.
    void release_held() {
        const auto now = clock_type::now();
        for (pipe* p : {&up_, &down_})
            for (chunk& c : p->held) c.due = std::min(c.due, now);
        kick();
    }

    void close(bool reset) {
        if (closed_) return;
        closed_ = true;
        auto self = shared_from_this();  // remove() may drop the last other owner
        for (tcp::socket* s : {&client_, &server_}) {
            if (!s->is_open()) continue;
            error_code ec;
            if (reset) s->set_option(asio::socket_base::linger(true, 0), ec);  // close sends RST
            s->close(ec);
        }
        up_.timer.cancel();
        down_.timer.cancel();
        core_.remove(*this);
    }

    // The port the target sees as the client's, while the client is still there (see
    // chaos_proxy::target_ports_of_live_clients).
    std::optional<std::uint16_t> target_port_of_live_client() const {
        if (closed_ || !connected_ || up_.read_eof) return std::nullopt;
        error_code ec;
        const auto local = server_.local_endpoint(ec);
        if (ec) return std::nullopt;
        return local.port();
    }

private:
    void connect_target() {
        connecting_ = true;
        server_.async_connect(core_.target, [self = shared_from_this()](error_code ec) {
            self->connecting_ = false;
            if (self->closed_) return;
            if (ec) return self->close(false);  // the target refused: the client sees EOF
            error_code ignored;
            self->server_.set_option(tcp::no_delay(true), ignored);
            self->connected_ = true;
            self->read(self->down_);
            self->write(self->up_);
        });
    }

    void read(pipe& p) {
        if (closed_ || p.reading || p.read_eof || (&p == &down_ && !connected_)) return;
        if (p.held_bytes >= chaos_proxy::max_queued_bytes) return;  // on_written reads again
        const auto room = std::min(read_size, chaos_proxy::max_queued_bytes - p.held_bytes);
        p.reading = true;
        p.from.async_read_some(
            asio::buffer(p.buffer.data(), room),
            [self = shared_from_this(), &p](error_code ec, std::size_t n) { self->on_read(p, ec, n); });
    }

    void on_read(pipe& p, error_code ec, std::size_t n) {
        p.reading = false;
        if (closed_) return;
        const auto due = clock_type::now() + core_.b.latency;
        if (ec == asio::error::eof) {
            p.read_eof = true;
            p.held.push_back(chunk{{}, 0, due, true});
            return write(p);
        }
        if (ec) return close(true);  // a reset (or worse) from one side reaches the other as a reset
        if (core_.b.close_on_data) return close(false);
        p.held.push_back(chunk{std::vector<char>(p.buffer.begin(), p.buffer.begin() + static_cast<long>(n)),
                               0, due, false});
        p.held_bytes += n;
        write(p);
        read(p);
    }

    void write(pipe& p) {
        if (closed_ || p.writing || p.waiting || p.write_eof || p.held.empty()) return;
        if (core_.b.blackhole || !connected_) return;  // held until kick()
        const auto now = clock_type::now();
        chunk& c = p.held.front();
        if (!p.piece_at) {
            const behaviour& b = core_.b;
            std::size_t n = c.data.size() - c.offset;  // 0 for a close
            if (b.slicing) n = std::min<std::size_t>(n, 1);
            auto at = std::max(now, c.due);
            if (b.bandwidth && n) {
                // The piece leaves once the link has carried it after the previous one: N bytes take
                // at least N / bandwidth.
                n = std::min(n, std::max<std::size_t>(1, b.bandwidth / pieces_per_second));
                at = std::max(at, p.link_free) +
                     std::chrono::nanoseconds(static_cast<std::int64_t>(n * 1'000'000'000ull / b.bandwidth));
            }
            p.piece_at = at;
            p.piece_size = n;
        }
        if (*p.piece_at > now) {
            p.waiting = true;
            p.timer.expires_at(*p.piece_at);
            p.timer.async_wait([self = shared_from_this(), &p](error_code) {
                p.waiting = false;
                self->write(p);
            });
            return;
        }
        if (core_.b.bandwidth) p.link_free = *p.piece_at;
        p.piece_at.reset();
        if (c.eof) {
            p.held.pop_front();
            p.write_eof = true;
            error_code ignored;
            p.to.shutdown(tcp::socket::shutdown_send, ignored);
            if (up_.write_eof && down_.write_eof) close(false);
            return;
        }
        p.writing = true;
        asio::async_write(
            p.to, asio::buffer(c.data.data() + c.offset, p.piece_size),
            [self = shared_from_this(), &p](error_code ec, std::size_t n) { self->on_written(p, ec, n); });
    }

    void on_written(pipe& p, error_code ec, std::size_t n) {
        p.writing = false;
        if (closed_) return;
        if (ec) return close(true);
        chunk& c = p.held.front();
        c.offset += n;
        p.held_bytes -= n;
        if (c.offset == c.data.size()) p.held.pop_front();
        read(p);  // there is room again
        write(p);
    }

    proxy_core& core_;
    tcp::socket client_;
    tcp::socket server_;
    pipe up_;    // client -> server
    pipe down_;  // server -> client
    bool connecting_ = false;
    bool connected_ = false;
    bool closed_ = false;
};

proxy_core::proxy_core(tcp::endpoint t) : target(t) {
    if (!t.address().is_loopback())
        throw std::invalid_argument("chaos_proxy: the target must be a loopback address, not " +
                                    t.address().to_string());
    const tcp::endpoint listen_on(asio::ip::address_v4::loopback(), 0);
    acceptor.open(listen_on.protocol());
    acceptor.bind(listen_on);
    acceptor.listen();
    port = acceptor.local_endpoint().port();
}

void proxy_core::accept() {
    if (stopping || accept_pending || !b.accepting) return;
    accept_pending = true;
    acceptor.async_accept([this](error_code ec, tcp::socket s) { on_accepted(ec, std::move(s)); });
}

void proxy_core::on_accepted(error_code ec, tcp::socket s) {
    accept_pending = false;
    if (stopping) return;  // s closes as it goes
    if (!ec) {
        // Accepted before a set_accepting(false) could cancel it: served like any other.
        ++accepted;
        auto c = std::make_shared<connection>(*this, std::move(s));
        connections.emplace(c.get(), c);
        ++open;
        c->start();
    } else if (ec != asio::error::operation_aborted) {
        // E.g. out of file descriptors: try again shortly instead of spinning on the error.
        accept_retry.expires_after(std::chrono::milliseconds(10));
        accept_retry.async_wait([this](error_code e) {
            if (!e) accept();
        });
        return;
    }
    accept();  // nothing when not accepting; a cancelled accept resumes if accepting was turned back on
}

void proxy_core::remove(connection& c) {
    if (connections.erase(&c)) --open;
}

void proxy_core::for_each_connection(const std::function<void(connection&)>& f) {
    std::vector<std::shared_ptr<connection>> all;  // f may close, which removes
    for (auto& [raw, c] : connections) all.push_back(c);
    for (auto& c : all) f(*c);
}

void proxy_core::apply(const std::function<void()>& change) {
    if (io.get_executor().running_in_this_thread()) return change();
    std::lock_guard lock(control_mutex);  // stop() cannot end the thread under a change
    if (stopped) return;
    std::promise<void> done;
    asio::post(io, [&] {
        change();
        done.set_value();
    });
    done.get_future().wait();
}

void proxy_core::shutdown() {
    stopping = true;
    error_code ignored;
    acceptor.close(ignored);
    accept_retry.cancel();
    for_each_connection([](connection& c) { c.close(false); });
    work.reset();  // run() returns once the cancelled operations have completed
}

}  // namespace

struct chaos_proxy::impl : proxy_core {
    using proxy_core::proxy_core;
};

chaos_proxy::chaos_proxy(tcp::endpoint target) : impl_(std::make_unique<impl>(target)) {
    auto& c = *impl_;
    asio::post(c.io, [&c] { c.accept(); });
    c.thread = std::thread([&c] { c.io.run(); });
}

chaos_proxy::chaos_proxy(std::uint16_t target_port)
    : chaos_proxy(tcp::endpoint(asio::ip::address_v4::loopback(), target_port)) {}

chaos_proxy::~chaos_proxy() {
    stop();
}

std::uint16_t chaos_proxy::port() const {
    return impl_->port;
}

void chaos_proxy::set_latency(std::chrono::nanoseconds d) {
    auto& c = *impl_;
    // At most a day: read time + latency must not overflow the clock.
    c.apply([&c, d] { c.b.latency = std::clamp<std::chrono::nanoseconds>(d, {}, std::chrono::hours(24)); });
}

void chaos_proxy::set_bandwidth(std::size_t bytes_per_second) {
    auto& c = *impl_;
    c.apply([&c, bytes_per_second] {
        c.b.bandwidth = bytes_per_second;
        c.for_each_connection([](connection& k) { k.kick(); });
    });
}

void chaos_proxy::set_slicing(bool on) {
    auto& c = *impl_;
    c.apply([&c, on] {
        c.b.slicing = on;
        c.for_each_connection([](connection& k) { k.kick(); });
    });
}

void chaos_proxy::set_close_on_data(bool on) {
    auto& c = *impl_;
    c.apply([&c, on] { c.b.close_on_data = on; });
}

void chaos_proxy::reset_all() {
    auto& c = *impl_;
    c.apply([&c] { c.for_each_connection([](connection& k) { k.close(true); }); });
}

void chaos_proxy::set_blackhole(bool on) {
    auto& c = *impl_;
    c.apply([&c, on] {
        c.b.blackhole = on;
        c.for_each_connection([](connection& k) { k.kick(); });
    });
}

void chaos_proxy::set_accepting(bool on) {
    auto& c = *impl_;
    c.apply([&c, on] {
        c.b.accepting = on;
        error_code ignored;
        if (!on) c.acceptor.cancel(ignored);  // the pending accept ends; none is started again
        c.accept();
    });
}

void chaos_proxy::normal() {
    auto& c = *impl_;
    c.apply([&c] {
        c.b = behaviour{};
        c.for_each_connection([](connection& k) { k.release_held(); });
        c.accept();
    });
}

std::size_t chaos_proxy::accepted() const {
    return impl_->accepted.load();
}
std::size_t chaos_proxy::open_connections() const {
    return impl_->open.load();
}

std::vector<std::uint16_t> chaos_proxy::target_ports_of_live_clients() const {
    auto& c = *impl_;
    std::vector<std::uint16_t> ports;
    c.apply([&] {
        c.for_each_connection([&](connection& k) {
            if (const auto port = k.target_port_of_live_client()) ports.push_back(*port);
        });
    });
    return ports;
}

void chaos_proxy::stop() {
    auto& c = *impl_;
    {
        std::lock_guard lock(c.control_mutex);
        if (c.stopped) return;
        c.stopped = true;
        asio::post(c.io, [&c] { c.shutdown(); });
    }
    if (c.thread.joinable()) c.thread.join();
}

}  // namespace test
