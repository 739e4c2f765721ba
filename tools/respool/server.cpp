// The threading model of `respool serve --threads N`: N workers, each an io_context run by one thread
// with its own pool. One acceptor, on worker 0, hands accepted sockets to the workers in turn
// (round-robin) rather than N acceptors on one port with SO_REUSEPORT: the port is bound once (port 0
// needs no second bind to the port the first one got), connections spread evenly even when there are
// only a few of them (SO_REUSEPORT hashes the 4-tuple), and nothing depends on Linux semantics.
// Accepting is cheap next to serving keep-alive connections, so one accepting thread is no bottleneck.
//
// Shutdown (SIGINT/SIGTERM, handled on worker 0): the acceptor closes; every worker closes its idle
// sessions and lets busy ones finish (their last response says Connection: close); when all sessions
// are gone, or --shutdown-timeout has passed (then the rest are cut), every pool is closed within what
// is left of that deadline; then the loops stop and the process exits 0.
#include "server.hpp"

#include "log.hpp"
#include "service.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <csignal>
#include <cstdio>
#include <exception>
#include <thread>

namespace asio = boost::asio;
namespace beast = boost::beast;
using asio::ip::tcp;
using namespace std::chrono_literals;

namespace respool_cli {
namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

// Probes the database every second while it answers, every 200 ms while it does not (so /health turns
// up soon after it is back). The first probe's end is reported through `first_done`.
asio::awaitable<void> probe_loop(worker& w, std::function<void()> first_done) {
    w.probe_timer.emplace(w.io);
    for (bool first = true; !w.stopping; first = false) {
        co_await w.store->probe();
        if (first) first_done();
        if (w.stopping) break;
        w.probe_timer->expires_after(w.store->reachable() ? 1000ms : 200ms);
        co_await w.probe_timer->async_wait(tuple_awaitable);
    }
}

asio::awaitable<void> accept_loop(service& svc, tcp::acceptor& acceptor) {
    std::size_t next = 0;
    asio::steady_timer pause(acceptor.get_executor());
    for (;;) {
        worker& target = *svc.workers[next++ % svc.workers.size()];
        auto [ec, socket] =
            co_await acceptor.async_accept(asio::any_io_executor(target.io.get_executor()), tuple_awaitable);
        if (!acceptor.is_open() || ec == asio::error::operation_aborted) break;
        if (ec) {  // out of descriptors, say: not a reason to stop, nor to spin
            log::warn("accept: " + ec.message());
            pause.expires_after(50ms);
            co_await pause.async_wait(tuple_awaitable);
            continue;
        }
        beast::error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        asio::co_spawn(target.io, run_session(svc, target, beast::tcp_stream(std::move(socket))),
                       asio::detached);
    }
}

// Workers still busy with a step (the first probe, the sessions, the pools' close); the last one to
// finish wakes worker 0, which waits on `timer` (its deadline bounds the step). Shared: a worker that
// finishes after the deadline, when worker 0 has moved on, still touches live memory.
struct countdown : std::enable_shared_from_this<countdown> {
    countdown(asio::io_context& io, std::size_t n, std::chrono::steady_clock::time_point until)
        : timer(io, until), left(n) {}
    void done() {
        if (--left == 0)
            asio::post(timer.get_executor(), [self = shared_from_this()] { self->timer.cancel(); });
    }
    asio::steady_timer timer;
    std::atomic<std::size_t> left;
};

// On the timer's loop. A cancellation cannot come before the wait: both run on this loop, and the
// check runs first.
asio::awaitable<void> wait_for(countdown& c) {
    if (c.left.load() == 0) co_return;
    co_await c.timer.async_wait(tuple_awaitable);
}

// The graceful shutdown, on worker 0 (the acceptor's loop). Runs once: `started` is only touched there.
asio::awaitable<void> shutdown(service& svc, tcp::acceptor& acceptor, bool& started, const char* why) {
    if (started) co_return;
    started = true;
    log::info(std::string(why) + ": finishing requests in flight, closing the pools");
    beast::error_code ignored;
    acceptor.close(ignored);
    worker& w0 = *svc.workers[0];
    const auto deadline = std::chrono::steady_clock::now() + svc.cfg.shutdown_timeout;

    auto busy = std::make_shared<countdown>(w0.io, svc.workers.size(), deadline);
    for (auto& wp : svc.workers) {
        worker* w = wp.get();
        asio::post(w->io, [w, busy] { stop_sessions(*w, [busy] { busy->done(); }); });
    }
    co_await wait_for(*busy);
    if (busy->left.load() != 0) {
        log::warn("shutdown deadline: closing " + std::to_string(busy->left.load()) +
                  " worker(s)' remaining connections");
        for (auto& wp : svc.workers) {
            worker* w = wp.get();
            asio::post(w->io, [w] { abort_sessions(*w); });
        }
    }

    // The pools, all at once, within what is left of the deadline (at least a moment, so that idle
    // connections are closed politely even when the sessions took it all).
    const auto left = std::max<std::chrono::nanoseconds>(deadline - std::chrono::steady_clock::now(), 500ms);
    auto open =
        std::make_shared<countdown>(w0.io, svc.workers.size(), std::chrono::steady_clock::now() + left + 1s);
    for (auto& wp : svc.workers) {
        worker* w = wp.get();
        asio::co_spawn(w->io, w->store->close(left), [open](std::exception_ptr) { open->done(); });
    }
    co_await wait_for(*open);
    if (open->left.load() != 0)
        log::warn(std::to_string(open->left.load()) + " pool(s) did not close in time");
    // Nothing is left that must run: stop every loop (what a pool still has queued is destroyed with it).
    for (auto& wp : svc.workers) wp->io.stop();
}

asio::awaitable<void> shutdown_on_signal(service& svc, asio::signal_set& signals, tcp::acceptor& acceptor,
                                         bool& started) {
    auto [ec, sig] = co_await signals.async_wait(tuple_awaitable);
    if (ec) co_return;
    co_await shutdown(svc, acceptor, started, sig == SIGINT ? "SIGINT" : "SIGTERM");
}

std::string show_endpoint(const tcp::endpoint& ep) {
    const auto a = ep.address();
    const std::string host = a.is_v6() ? "[" + a.to_string() + "]" : a.to_string();
    return host + ":" + std::to_string(ep.port());
}

}  // namespace

int run_serve(const serve_config& cfg, serve_hooks* hooks) {
    service svc{cfg, parse_db_url(cfg.db), {}, std::make_unique<db_health>(cfg.threads)};
    for (std::size_t i = 0; i < cfg.threads; ++i) {
        svc.workers.push_back(std::make_unique<worker>(i));
        svc.workers.back()->store = make_store(svc.workers.back()->io.get_executor(), svc.target, cfg, i);
        svc.workers.back()->store->report_to(*svc.health, i);
    }
    worker& w0 = *svc.workers[0];

    const listen_address where = parse_listen(cfg.listen);
    tcp::acceptor acceptor(w0.io);
    try {
        tcp::resolver resolver(w0.io);
        const auto results = resolver.resolve(where.host, std::to_string(where.port),
                                              tcp::resolver::passive | tcp::resolver::numeric_service);
        const tcp::endpoint ep = *results.begin();
        acceptor.open(ep.protocol());
        acceptor.set_option(tcp::acceptor::reuse_address(true));
        acceptor.bind(ep);
        acceptor.listen(asio::socket_base::max_listen_connections);
    } catch (const boost::system::system_error& e) {
        log::error("cannot listen on " + cfg.listen + ": " + e.code().message());
        return 1;
    }
    const std::string bound = show_endpoint(acceptor.local_endpoint());

    // Registered before the ready line: a signal right after it is a graceful shutdown.
    asio::signal_set signals(w0.io, SIGINT, SIGTERM);
    bool shutdown_started = false;
    asio::co_spawn(w0.io, shutdown_on_signal(svc, signals, acceptor, shutdown_started), asio::detached);
    if (hooks)
        hooks->stop = [&] {
            asio::co_spawn(w0.io, shutdown(svc, acceptor, shutdown_started, "stop requested"),
                           asio::detached);
        };

    // Ready once every worker's first probe is done (the database answered, or it did not) or 2 s
    // have passed (a database that neither answers nor refuses: the service starts, /health says down).
    auto unprobed =
        std::make_shared<countdown>(w0.io, svc.workers.size(), std::chrono::steady_clock::now() + 2s);
    for (auto& wp : svc.workers) {
        worker* w = wp.get();
        asio::co_spawn(w->io, probe_loop(*w, [unprobed] { unprobed->done(); }), asio::detached);
    }
    asio::co_spawn(
        w0.io,
        [&]() -> asio::awaitable<void> {
            co_await wait_for(*unprobed);
            log::info(std::string(svc.target.kind == db_kind::sqlite ? "sqlite " : "postgresql ") +
                      svc.target.shown + ", " + std::to_string(svc.workers.size()) + " thread(s), pool max " +
                      std::to_string(cfg.max) + " per thread");
            if (hooks && hooks->on_listening) {
                hooks->on_listening(bound);
            } else {
                std::printf("listening on http://%s\n", bound.c_str());
                std::fflush(stdout);
            }
            co_await accept_loop(svc, acceptor);
        },
        asio::detached);

    // The loops stay up until the shutdown stops them, whatever they have to do meanwhile.
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
    for (auto& wp : svc.workers) guards.push_back(asio::make_work_guard(wp->io));
    auto run = [](worker& w) {
        try {
            w.io.run();
        } catch (const std::exception& e) {  // a bug: say so, and do not hang the other loops
            log::error("worker " + std::to_string(w.index) + ": " + e.what());
            std::_Exit(1);
        }
    };
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < svc.workers.size(); ++i) threads.emplace_back(run, std::ref(*svc.workers[i]));
    run(w0);
    for (auto& t : threads) t.join();
    signals.cancel();
    for (auto& wp : svc.workers) wp->store.reset();  // the loops are stopped: nothing runs on them
    return 0;
}

}  // namespace respool_cli
