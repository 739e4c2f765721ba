// pg::listener on a real server: notifications in order on the channels it listens on (quoted names,
// added and removed while it runs), a terminated connection reconnected and LISTENed again with a gap
// event first (a notification sent while it was away not delivered, one sent after delivered), a
// server that is not there yet, close() ending a pending receive, and a cancelled receive losing no
// event.
#include "pg_test_support.hpp"

#include <respool/pg/listener.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

namespace {

using namespace pg_test;

class pg_listener : public ::testing::Test {
protected:
    void SetUp() override {
        if (conninfo().empty()) GTEST_SKIP() << "RESPOOL_PG_CONNINFO_FILE not set (run through ctest)";
        if (behind_pooler()) GTEST_SKIP() << "a listening session does not survive a transaction pooler";
    }
};

asio::awaitable<pg::listener_event> receive(pg::listener& l) {
    // Bounded: a missing event fails the test instead of hanging it.
    asio::cancellation_signal cancel;
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(10s);
    t.async_wait([&](boost::system::error_code ec) {
        if (!ec) cancel.emit(asio::cancellation_type::terminal);
    });
    auto token = asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable));
    std::tuple<boost::system::error_code, pg::listener_event> got = co_await l.async_receive(token);
    t.cancel();
    if (std::get<0>(got)) throw std::runtime_error("receive: " + std::get<0>(got).message());
    pg::listener_event e = std::move(std::get<1>(got));  // (not a structured binding: GCC 12 and co_return)
    co_return e;
}

TEST_F(pg_listener, delivers_in_order_on_its_channels_and_follows_listen_and_unlisten) {
    // (Lists built outside the coroutine: GCC 12 cannot copy an initializer_list's array inside one.)
    const std::vector<std::string> channels{"orders", "Mixed Case"}, payloads{"one", "two", "three"};
    const pg::listener_config cfg{.conninfo = conninfo() + " application_name=listener_order"};
    run([&]() -> asio::awaitable<void> {
        pg::listener l(co_await asio::this_coro::executor, cfg, channels);
        co_await l.async_wait_listening(asio::use_awaitable);
        admin a = co_await admin::open();
        co_await a.query(
            "NOTIFY orders, 'one'; NOTIFY \"Mixed Case\", 'two'; NOTIFY other, 'not ours'; "
            "SELECT pg_notify('orders', 'three')");
        for (const std::string& want : payloads) {
            pg::listener_event e = co_await receive(l);
            EXPECT_EQ(e.what, pg::listener_event::kind::notification);
            EXPECT_EQ(e.message.payload, want);
        }
        l.listen("other");
        l.unlisten("orders");
        // The change is applied on the listener's own time: wait until the server shows it.
        co_await a.wait_until([](admin& x) -> asio::awaitable<bool> {
            co_return co_await x.count(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                "'listener_order' AND state = 'idle' AND query LIKE '%UNLISTEN \"orders\"%'") > 0;
        });
        co_await a.query("NOTIFY orders, 'gone'; NOTIFY other, 'four'");
        pg::listener_event e = co_await receive(l);
        EXPECT_EQ(e.message.channel, "other");
        EXPECT_EQ(e.message.payload, "four");
        EXPECT_EQ(l.stats().notifications, 4u);
        EXPECT_EQ(l.stats().gaps, 0u);
        l.close();
        auto [ec, none] = co_await l.async_receive(asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, respool::errc::closed);
    });
}

TEST_F(pg_listener, a_lost_connection_is_reconnected_with_a_gap_event_first) {
    const std::vector<std::string> channels{"jobs"};
    const pg::listener_config cfg{.conninfo = conninfo() + " application_name=listener_gap",
                                  .reconnect_initial = 50ms};
    run([&]() -> asio::awaitable<void> {
        pg::listener l(co_await asio::this_coro::executor, cfg, channels);
        co_await l.async_wait_listening(asio::use_awaitable);
        admin a = co_await admin::open();
        const pg::result pid =
            co_await a.query("SELECT pid FROM pg_stat_activity WHERE application_name = 'listener_gap'");
        if (pid.rows() != 1) co_return ADD_FAILURE() << "the listener's backend is not there";
        co_await a.terminate(pid.get<std::int32_t>(0, 0));
        // Sent while it is away (its backend gone; lost unless the new connection LISTENs already).
        co_await a.query("NOTIFY jobs, 'while away'");
        pg::listener_event gap = co_await receive(l);
        EXPECT_EQ(gap.what, pg::listener_event::kind::gap);
        EXPECT_NE(gap.reason.find("connection lost"), std::string::npos) << gap.reason;
        EXPECT_NE(gap.reason.find("notifications sent meanwhile were not delivered"), std::string::npos);
        EXPECT_EQ(gap.reason.find("respool-test-secret"), std::string::npos);
        // LISTENing again: a notification after the gap is delivered.
        co_await a.query("NOTIFY jobs, 'after'");
        pg::listener_event e = co_await receive(l);
        if (e.message.payload == "while away") e = co_await receive(l);  // it was back in time for it
        EXPECT_EQ(e.what, pg::listener_event::kind::notification);
        EXPECT_EQ(e.message.payload, "after");
        EXPECT_EQ(l.stats().connects, 2u);
        EXPECT_EQ(l.stats().gaps, 1u);
        l.close();
    });
}

TEST_F(pg_listener, a_server_not_there_is_retried_and_close_ends_a_pending_receive) {
    const std::vector<std::string> channels{"x"};
    const pg::listener_config cfg{
        .conninfo = "host=127.0.0.1 port=1 user=x password=secret-word connect_timeout=1",
        .reconnect_initial = 20ms,
        .reconnect_max = 50ms};
    run([&]() -> asio::awaitable<void> {
        pg::listener l(co_await asio::this_coro::executor, cfg, channels);
        asio::steady_timer t(co_await asio::this_coro::executor);
        for (int i = 0; i < 200 && l.stats().last_failure.empty(); ++i) {
            t.expires_after(10ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        const pg::listener_stats st = l.stats();
        EXPECT_FALSE(st.listening);
        EXPECT_NE(st.last_failure.find("connect failed"), std::string::npos) << st.last_failure;
        EXPECT_EQ(st.last_failure.find("secret-word"), std::string::npos) << st.last_failure;
        // A receive waiting when close() comes ends with closed, as does a wait for listening.
        t.expires_after(50ms);
        t.async_wait([&](boost::system::error_code) { l.close(); });
        auto [ec, e] = co_await l.async_receive(asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(ec, respool::errc::closed);
        auto [wec] = co_await l.async_wait_listening(asio::as_tuple(asio::use_awaitable));
        EXPECT_EQ(wec, respool::errc::closed);
    });
}

TEST_F(pg_listener, a_cancelled_receive_loses_no_event) {
    const std::vector<std::string> channels{"c"};
    const pg::listener_config cfg{.conninfo = conninfo()};
    run([&]() -> asio::awaitable<void> {
        pg::listener l(co_await asio::this_coro::executor, cfg, channels);
        co_await l.async_wait_listening(asio::use_awaitable);
        asio::cancellation_signal cancel;
        asio::steady_timer t(co_await asio::this_coro::executor);
        t.expires_after(20ms);
        t.async_wait([&](boost::system::error_code) { cancel.emit(asio::cancellation_type::terminal); });
        auto [ec, e] = co_await l.async_receive(
            asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable)));
        EXPECT_EQ(ec, asio::error::operation_aborted);
        admin a = co_await admin::open();
        co_await a.query("NOTIFY c, 'kept'");
        pg::listener_event got = co_await receive(l);
        EXPECT_EQ(got.message.payload, "kept");
        l.close();
    });
}

TEST(pg_listener_config, bad_settings_name_what_is_wrong) {
    asio::io_context io;
    auto error_of = [&](pg::listener_config c, std::vector<std::string> channels) {
        try {
            pg::listener l(io.get_executor(), std::move(c), std::move(channels));
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(error_of({}, {}).find("conninfo is empty"), std::string::npos);
    EXPECT_NE(error_of({.conninfo = "host=x"}, {""}).find("a channel name is empty"), std::string::npos);
    EXPECT_NE(error_of({.conninfo = "host=x", .reconnect_initial = 0ms}, {}).find("reconnect_initial"),
              std::string::npos);
    EXPECT_NE(error_of({.conninfo = "host=x", .queue_capacity = 0}, {}).find("queue_capacity"),
              std::string::npos);
}

}  // namespace
