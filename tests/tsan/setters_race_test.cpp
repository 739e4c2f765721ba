// A thread_safe pool's circuit strategy, observer and log sink replaced while other threads borrow:
// run under ThreadSanitizer (and ASan) by scripts/test. Checks: every event reaches exactly one of the
// objects set over time (none lost, none twice), and no replaced object is destroyed while a thread that
// read it before the replacement still calls it (the sanitizers see a use after free or a race).
#include "../asio/test_support.hpp"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

struct heard {
    std::atomic<long> released{0}, failures{0}, lines{0};
};

struct counting_observer final : respool::observer {
    explicit counting_observer(heard& to) : h(to) {}
    void on_released(std::chrono::nanoseconds) override { ++h.released; }
    heard& h;
};

struct counting_strategy final : respool::circuit_strategy {
    explicit counting_strategy(heard& to) : h(to) {}
    void report_success(respool::circuit_breaker&) override {}
    void report_failure(respool::circuit_breaker&, const respool::error_code&) override { ++h.failures; }
    heard& h;
};

struct counting_sink final : respool::log_sink {
    explicit counting_sink(heard& to) : h(to) {}
    void log(respool::log_level level, std::string_view) override {
        if (level == respool::log_level::warning) ++h.lines;
    }
    heard& h;
};

}  // namespace

TEST(setters_race, strategy_observer_and_sink_replaced_while_threads_borrow) {
    boost::asio::io_context io;
    heard h;
    respool::hooks<int> hooks;
    std::atomic<int> next{0};
    hooks.factory = [&next] { return ++next; };
    hooks.destructor = [](int&) { throw std::runtime_error("a destructor that fails: a warning line"); };
    respool::pool_options o;
    o.max = 4;
    o.thread_safe = true;
    respool::pool<int> p(io.get_executor(), o, std::move(hooks));
    p.set_observer(std::make_shared<counting_observer>(h));
    p.set_circuit_strategy(std::make_shared<counting_strategy>(h));
    p.set_log_sink(std::make_shared<counting_sink>(h));

    constexpr int borrowers = 2, rounds = 20000, swaps = 300;
    std::atomic<long> releases{0}, poisons{0};
    std::atomic<int> running{borrowers};
    std::vector<std::thread> threads;
    for (int t = 0; t < borrowers; ++t)
        threads.emplace_back([&, t] {
            for (int i = 0; i < rounds; ++i) {
                auto l = p.try_acquire();
                if (!l) continue;
                if ((i + t) % 5 == 0) {  // destroyed: the strategy hears a failure, the sink a line
                    l.poison();
                    ++poisons;
                } else {
                    l.release();
                }
                ++releases;
            }
            --running;
        });
    // Replaces each one while the borrowers run (bounded: at most `swaps` rounds).
    for (int s = 0; s < swaps && running.load() > 0; ++s) {
        p.set_observer(std::make_shared<counting_observer>(h));
        p.set_circuit_strategy(std::make_shared<counting_strategy>(h));
        p.set_log_sink(std::make_shared<counting_sink>(h));
        std::this_thread::yield();
    }
    for (auto& t : threads) t.join();

    EXPECT_GT(poisons.load(), 0);
    EXPECT_EQ(h.released.load(), releases.load()) << "each release heard by exactly one observer";
    EXPECT_EQ(h.failures.load(), poisons.load()) << "each poisoned lease heard by exactly one strategy";
    EXPECT_EQ(h.lines.load(), poisons.load()) << "each failed destructor logged by exactly one sink";
}
