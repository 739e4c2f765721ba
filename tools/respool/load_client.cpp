#include "load_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <charconv>
#include <chrono>
#include <random>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bh = boost::beast::http;
using namespace std::chrono_literals;

namespace respool_cli {
namespace {

constexpr auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);

bool parse_unsigned(std::string_view s, unsigned& out) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

bool split_mix(const std::string& text, load_mix& m) {
    const auto a = text.find(':');
    const auto b = a == std::string::npos ? a : text.find(':', a + 1);
    if (b == std::string::npos) return false;
    const std::string_view t(text);
    return parse_unsigned(t.substr(0, a), m.get) && parse_unsigned(t.substr(a + 1, b - a - 1), m.put) &&
           parse_unsigned(t.substr(b + 1), m.incr) && m.get + m.put + m.incr > 0;
}

}  // namespace

std::string mix_error(const std::string& text) {
    load_mix m;
    if (split_mix(text, m)) return {};
    return "'" + text + "' is not GET:PUT:INCR weights (e.g. 70:20:10, not all zero)";
}

load_mix parse_mix(const std::string& text) {
    load_mix m;
    split_mix(text, m);
    return m;
}

std::string format_mix(const load_mix& m) {
    return std::to_string(m.get) + ":" + std::to_string(m.put) + ":" + std::to_string(m.incr);
}

asio::awaitable<void> load_client(const load_settings& s, load_tally& tally, unsigned seed) {
    ++tally.running;
    auto ex = co_await asio::this_coro::executor;
    beast::tcp_stream stream(ex);
    asio::steady_timer backoff(ex);
    beast::flat_buffer buffer;
    bool connected = false;
    std::mt19937 rng(seed);
    std::uniform_int_distribution<unsigned> pick(0, s.mix.get + s.mix.put + s.mix.incr - 1);
    std::uniform_int_distribution<unsigned> key(0, s.keys - 1), counter(0, s.counters - 1);
    const std::string value(s.value_size, static_cast<char>('a' + seed % 26));
    while (!tally.stopping) {
        if (!connected) {
            stream.expires_after(5s);
            auto [cec] = co_await stream.async_connect(s.service, tuple_awaitable);
            if (cec) {
                ++tally.transport_errors;
                backoff.expires_after(50ms);  // the service is not there (yet): do not spin
                co_await backoff.async_wait(tuple_awaitable);
                continue;
            }
            connected = true;
        }
        bh::request<bh::string_body> req;
        req.version(11);
        req.set(bh::field::host, "127.0.0.1");
        const unsigned p = pick(rng);
        int counter_index = -1;
        if (p < s.mix.get) {
            req.method(bh::verb::get);
            req.target("/kv/" + s.prefix + "k" + std::to_string(key(rng)));
        } else if (p < s.mix.get + s.mix.put) {
            req.method(bh::verb::put);
            req.target("/kv/" + s.prefix + "k" + std::to_string(key(rng)));
            req.body() = value;
        } else {
            counter_index = static_cast<int>(counter(rng));
            req.method(bh::verb::post);
            req.target("/kv/" + s.prefix + "c" + std::to_string(counter_index) + "/incr");
        }
        req.prepare_payload();
        const auto t0 = std::chrono::steady_clock::now();
        stream.expires_after(60s);
        auto [wec, wn] = co_await bh::async_write(stream, req, tuple_awaitable);
        bh::response<bh::string_body> res;
        beast::error_code ec = wec;
        if (!ec) {
            auto [rec, rn] = co_await bh::async_read(stream, buffer, res, tuple_awaitable);
            ec = rec;
        }
        if (ec) {
            ++tally.transport_errors;
            if (counter_index >= 0) ++tally.uncertain_increments;
            beast::error_code ignored;
            stream.socket().close(ignored);
            buffer.clear();
            connected = false;
            continue;
        }
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        tally.latencies.push_back(ms);
        if (res.result_int() < 500) tally.answered.push_back(ms);
        tally.window.push_back(ms);
        ++tally.statuses[res.result_int()];
        ++tally.window_statuses[res.result_int()];
        if (counter_index >= 0) {
            if (res.result_int() == 200) ++tally.acknowledged[static_cast<std::size_t>(counter_index)];
            if (res.result_int() == 500) ++tally.uncertain_increments;
        }
        if (!res.keep_alive()) {
            beast::error_code ignored;
            stream.socket().close(ignored);
            buffer.clear();
            connected = false;
        }
    }
    beast::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    --tally.running;
}

asio::awaitable<std::pair<unsigned, std::string>> http_request(asio::ip::tcp::endpoint service,
                                                               std::string method, std::string target) {
    beast::tcp_stream stream(co_await asio::this_coro::executor);
    stream.expires_after(10s);
    auto [cec] = co_await stream.async_connect(service, tuple_awaitable);
    if (cec) co_return std::pair<unsigned, std::string>{0, {}};
    bh::request<bh::string_body> req;
    req.version(11);
    req.method(bh::string_to_verb(method));
    req.target(target);
    req.set(bh::field::host, "127.0.0.1");
    req.keep_alive(false);
    req.prepare_payload();
    auto [wec, wn] = co_await bh::async_write(stream, req, tuple_awaitable);
    if (wec) co_return std::pair<unsigned, std::string>{0, {}};
    beast::flat_buffer buffer;
    bh::response<bh::string_body> res;
    auto [rec, rn] = co_await bh::async_read(stream, buffer, res, tuple_awaitable);
    if (rec) co_return std::pair<unsigned, std::string>{0, {}};
    co_return std::pair<unsigned, std::string>{res.result_int(), res.body()};
}

}  // namespace respool_cli
