// respool::pg::listener: LISTEN/NOTIFY that survives a lost connection. It holds a connection of its
// own (never a pool's: a listening session must stay open, and a pool would count it as a leak),
// LISTENs on its channels, delivers every notification in order, and when the connection is lost it
// reconnects (with back-off), LISTENs again and delivers a `gap` event first: notifications sent while
// it was away are not delivered by PostgreSQL, so the application should re-read what it watches.
//
//   pg::listener l(io.get_executor(), {.conninfo = "..."}, {"orders"});
//   for (;;) {
//       pg::listener_event e = co_await l.async_receive(asio::use_awaitable);
//       if (e.what == pg::listener_event::kind::gap) reload_orders();  // e.reason says why
//       else handle(e.message.payload);
//   }
//
// docs/06-postgresql.md, "LISTEN/NOTIFY: pg::listener".
#pragma once

#include <respool/error.hpp>
#include <respool/pg/values.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace respool::pg {

struct listener_config {
    std::string conninfo;  // libpq's conninfo or URI (never behind a transaction pooler: see the docs)
    std::chrono::steady_clock::duration connect_timeout = std::chrono::seconds(10);
    // After a lost connection or a failed connect: the first wait, doubled each time up to the second.
    std::chrono::steady_clock::duration reconnect_initial = std::chrono::milliseconds(100);
    std::chrono::steady_clock::duration reconnect_max = std::chrono::seconds(5);
    // Events held until received. When full, the listener stops reading its connection until one is
    // received (the server queues the notifications meanwhile): nothing is dropped.
    std::size_t queue_capacity = 4096;
};

struct listener_event {
    enum class kind {
        notification,  // `message` holds it
        gap,           // the connection was lost and is back, LISTENing again: notifications sent
                       // while it was away were not delivered; `reason` says why and for how long
    };
    kind what = kind::notification;
    notification message{};
    std::string reason{};  // masked
};

struct listener_stats {
    bool listening = false;           // connected, every channel LISTENed
    std::uint64_t connects = 0;       // successful connects
    std::uint64_t gaps = 0;           // gap events sent
    std::uint64_t notifications = 0;  // delivered into the queue
    std::string last_failure;         // why the last connect or the connection failed (masked)
};

namespace detail {
struct listener_state;
}

class listener {
public:
    using executor_type = boost::asio::any_io_executor;

    // Starts connecting at once. The channel names are used as they are (quoted: "Orders" and "orders"
    // are two channels), as NOTIFY and pg_notify name them. Throws std::invalid_argument for an empty
    // conninfo or channel name, or reconnect settings that are not positive.
    listener(executor_type ex, listener_config cfg, std::vector<std::string> channels = {});
    ~listener();  // close()
    listener(listener&&) noexcept;
    listener& operator=(listener&&) noexcept;
    listener(const listener&) = delete;
    listener& operator=(const listener&) = delete;

    [[nodiscard]] executor_type get_executor() const noexcept;

    // Adds a channel (LISTEN now when connected, and after every reconnect) or removes one. On the
    // listener's executor.
    void listen(std::string channel);
    void unlisten(std::string channel);

    // The next event, in the order they arrived.
    //  Handler: void(error_code, listener_event), on its associated executor; never inline.
    //  Cancellation: terminal, partial, total (the event stays queued for the next receive).
    //  Errors: errc::closed after close() (events not yet received are dropped); operation_aborted.
    //  Threads: call it on the listener's executor (one receive at a time is the usual loop).
    template <class Token = boost::asio::deferred_t>
    auto async_receive(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code, listener_event)>(
            [this](auto handler) { start_receive(std::move(handler)); }, token);
    }

    // Completes once the listener is connected with every channel LISTENed (at once when it is).
    // Notifications sent after that are delivered. Handler: void(error_code): closed after close().
    template <class Token = boost::asio::deferred_t>
    auto async_wait_listening(Token&& token = {}) {
        return boost::asio::async_initiate<Token, void(error_code)>(
            [this](auto handler) { start_wait_listening(std::move(handler)); }, token);
    }

    [[nodiscard]] listener_stats stats() const;
    // Closes the connection; pending and later receives complete with errc::closed.
    void close() noexcept;

private:
    void start_receive(boost::asio::any_completion_handler<void(error_code, listener_event)> handler);
    void start_wait_listening(boost::asio::any_completion_handler<void(error_code)> handler);
    std::shared_ptr<detail::listener_state> state_;
};

}  // namespace respool::pg
