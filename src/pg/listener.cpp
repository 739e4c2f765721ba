// pg::listener (listener.hpp): one coroutine owns the connection. It connects (with back-off), LISTENs
// on the wanted channels, then waits for a notification or a wake-up (a channel added or removed, the
// listener closed); a notification goes into the event queue (an Asio channel: when full, the
// coroutine waits, and the server keeps the notifications). A lost connection is noted, and once a new
// one LISTENs again a gap event goes first.
#include <respool/pg/connection.hpp>
#include <respool/pg/listener.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/channel.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>

namespace asio = boost::asio;

namespace respool::pg {

namespace detail {

namespace {

using clock = std::chrono::steady_clock;

std::string quoted(const std::string& channel) {
    std::string q = "\"";
    for (char c : channel) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

long long ms(clock::duration d) {
    return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

}  // namespace

struct listener_state : std::enable_shared_from_this<listener_state> {
    listener_state(asio::any_io_executor e, listener_config c, std::vector<std::string> channels)
        : ex(std::move(e)),
          cfg(std::move(c)),
          wanted(channels.begin(), channels.end()),
          events(ex, cfg.queue_capacity),
          wake(ex),
          ready(ex, clock::time_point::max()) {}

    asio::any_io_executor ex;
    listener_config cfg;
    std::set<std::string> wanted;  // what the application asked for
    std::set<std::string> active;  // what the current connection LISTENs on
    std::optional<connection> conn;
    asio::experimental::channel<void(error_code, listener_event)> events;
    asio::steady_timer wake;   // the loop's pauses and waits: cancelled to interrupt them
    asio::steady_timer ready;  // never expires: cancelled when listening, for async_wait_listening
    bool closed = false;
    bool changed = false;  // wanted differs from active
    bool listening = false;
    mutable std::mutex m;  // st is read from any thread
    listener_stats st;

    void note_failure(std::string why) {
        std::lock_guard lock(m);
        st.last_failure = std::move(why);
        st.listening = false;
    }

    asio::awaitable<void> pause(clock::duration d) {
        wake.expires_after(d);
        co_await wake.async_wait(asio::as_tuple(asio::use_awaitable));
    }

    // LISTEN what is wanted and not active, UNLISTEN the reverse: one script; empty when nothing.
    std::string changes() const {
        std::string script;
        for (const std::string& c : wanted)
            if (!active.count(c)) script += "LISTEN " + quoted(c) + ";";
        for (const std::string& c : active)
            if (!wanted.count(c)) script += "UNLISTEN " + quoted(c) + ";";
        return script;
    }

    static asio::awaitable<void> run(std::shared_ptr<listener_state> self) {
        listener_state& s = *self;
        clock::duration backoff = s.cfg.reconnect_initial;
        bool listened_before = false;
        clock::time_point lost_at{};
        std::string lost_why;
        while (!s.closed) {
            s.conn.emplace(s.ex);
            auto [ec] = co_await s.conn->async_connect(s.cfg.conninfo, s.cfg.connect_timeout,
                                                       asio::as_tuple(asio::use_awaitable));
            if (s.closed) break;
            if (ec) {
                const std::string why = "connect failed: " + s.conn->last_error().message;
                s.note_failure(why);
                if (!listened_before || lost_why.empty()) lost_why = why;
                s.conn.reset();
                co_await s.pause(backoff);
                backoff = std::min(backoff * 2, s.cfg.reconnect_max);
                continue;
            }
            {
                std::lock_guard lock(s.m);
                ++s.st.connects;
            }
            s.active.clear();
            s.changed = true;
            std::string why;
            while (!s.closed) {
                if (s.changed) {
                    s.changed = false;
                    if (std::string script = s.changes(); !script.empty()) {
                        auto [qec, r] = co_await s.conn->async_query(std::move(script),
                                                                     asio::as_tuple(asio::use_awaitable));
                        if (qec) {
                            why = "LISTEN failed: " + s.conn->last_error().message;
                            break;
                        }
                        s.active = s.wanted;
                        if (s.changed) continue;  // changed again while it ran
                    }
                    if (!s.listening) {
                        s.listening = true;
                        backoff = s.cfg.reconnect_initial;
                        {
                            std::lock_guard lock(s.m);
                            s.st.listening = true;
                        }
                        s.ready.cancel();
                        if (listened_before) {
                            listener_event gap{listener_event::kind::gap, {}, {}};
                            gap.reason = lost_why + "; listening again after " +
                                         std::to_string(ms(clock::now() - lost_at)) +
                                         " ms: notifications sent meanwhile were not delivered";
                            {
                                std::lock_guard lock(s.m);
                                ++s.st.gaps;
                            }
                            auto [sec] = co_await s.events.async_send(error_code{}, std::move(gap),
                                                                      asio::as_tuple(asio::use_awaitable));
                            if (sec) break;
                        }
                        listened_before = true;
                    }
                    continue;
                }
                // A notification, or a wake-up (a channel added or removed, close()), whichever comes
                // first; the other is cancelled (the connection stays usable). Named locals: GCC 12
                // mishandles temporaries in a co_await's operand.
                using namespace asio::experimental::awaitable_operators;
                s.wake.expires_at(clock::time_point::max());
                auto note = s.conn->async_wait_notification(asio::as_tuple(asio::use_awaitable));
                auto poke = s.wake.async_wait(asio::as_tuple(asio::use_awaitable));
                auto either = std::move(note) || std::move(poke);
                auto first = co_await std::move(either);
                if (first.index() == 1) continue;
                auto& [nec, n] = std::get<0>(first);
                if (nec == asio::error::operation_aborted) continue;
                if (nec) {
                    why = "connection lost: " + s.conn->last_error().message;
                    if (s.conn->last_error().message.empty()) why = "connection lost: " + nec.message();
                    break;
                }
                {
                    std::lock_guard lock(s.m);
                    ++s.st.notifications;
                }
                // (A named local: GCC 12 destroys a braced temporary in a co_await's arguments twice.)
                listener_event event{listener_event::kind::notification, std::move(n), {}};
                auto [sec] = co_await s.events.async_send(error_code{}, std::move(event),
                                                          asio::as_tuple(asio::use_awaitable));
                if (sec) break;  // closed
            }
            if (s.closed) break;
            s.listening = false;
            s.note_failure(why);
            lost_at = clock::now();
            lost_why = why;
            s.conn->close();
            s.conn.reset();
            co_await s.pause(backoff);
            backoff = std::min(backoff * 2, s.cfg.reconnect_max);
        }
        if (s.conn) s.conn->close();
        s.conn.reset();
        s.listening = false;
        {
            std::lock_guard lock(s.m);
            s.st.listening = false;
        }
        s.events.close();  // receives get errc::closed
        s.ready.cancel();
    }
};

}  // namespace detail

listener::listener(executor_type ex, listener_config cfg, std::vector<std::string> channels) {
    if (cfg.conninfo.empty()) throw std::invalid_argument("respool::pg::listener: conninfo is empty");
    for (const std::string& c : channels)
        if (c.empty()) throw std::invalid_argument("respool::pg::listener: a channel name is empty");
    if (cfg.reconnect_initial <= std::chrono::steady_clock::duration::zero() ||
        cfg.reconnect_max < cfg.reconnect_initial)
        throw std::invalid_argument(
            "respool::pg::listener: reconnect_initial must be positive and reconnect_max at least as long");
    if (cfg.queue_capacity == 0)
        throw std::invalid_argument("respool::pg::listener: queue_capacity must be positive");
    state_ = std::make_shared<detail::listener_state>(std::move(ex), std::move(cfg), std::move(channels));
    asio::co_spawn(state_->ex, detail::listener_state::run(state_), asio::detached);
}

listener::~listener() {
    close();
}
listener::listener(listener&&) noexcept = default;
listener& listener::operator=(listener&& other) noexcept {
    if (this != &other) {
        close();
        state_ = std::move(other.state_);
    }
    return *this;
}

listener::executor_type listener::get_executor() const noexcept {
    return state_->ex;
}

void listener::listen(std::string channel) {
    if (channel.empty()) throw std::invalid_argument("respool::pg::listener: a channel name is empty");
    asio::dispatch(state_->ex, [s = state_, c = std::move(channel)]() mutable {
        if (s->closed || !s->wanted.insert(std::move(c)).second) return;
        s->changed = true;
        s->wake.cancel();
    });
}

void listener::unlisten(std::string channel) {
    asio::dispatch(state_->ex, [s = state_, c = std::move(channel)] {
        if (s->closed || s->wanted.erase(c) == 0) return;
        s->changed = true;
        s->wake.cancel();
    });
}

void listener::start_receive(asio::any_completion_handler<void(error_code, listener_event)> handler) {
    auto slot = handler.get_cancellation_slot();
    // The queue completes on the listener's executor (it needs one that can be required not to block);
    // the handler then runs on its own.
    state_->events.async_receive(asio::bind_cancellation_slot(
        slot, [s = state_, h = std::move(handler)](error_code ec, listener_event e) mutable {
            // close() cancels what waits on the queue, then closes it: either way "closed".
            if (ec == asio::experimental::error::channel_closed ||
                (ec == asio::experimental::error::channel_cancelled && s->closed))
                ec = respool::errc::closed;
            else if (ec == asio::experimental::error::channel_cancelled)
                ec = asio::error::operation_aborted;
            asio::dispatch(asio::append(std::move(h), ec, std::move(e)));
        }));
}

void listener::start_wait_listening(asio::any_completion_handler<void(error_code)> handler) {
    auto waiting = [](std::shared_ptr<detail::listener_state> s) -> asio::awaitable<error_code> {
        while (!s->listening && !s->closed) co_await s->ready.async_wait(asio::as_tuple(asio::use_awaitable));
        co_return s->listening ? error_code{} : error_code(respool::errc::closed);
    };
    asio::co_spawn(state_->ex, waiting(state_),
                   [h = std::move(handler)](std::exception_ptr, error_code ec) mutable { std::move(h)(ec); });
}

listener_stats listener::stats() const {
    std::lock_guard lock(state_->m);
    return state_->st;
}

void listener::close() noexcept {
    if (!state_) return;
    asio::dispatch(state_->ex, [s = state_] {
        if (s->closed) return;
        s->closed = true;
        s->wake.cancel();
        s->ready.cancel();
        // Events not yet received are dropped: a send waiting for room ends, receives get closed.
        s->events.cancel();
        s->events.close();
    });
}

}  // namespace respool::pg
