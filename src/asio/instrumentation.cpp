// Observers: several behind one, each isolated from the others' exceptions; one-shot signals.
#include "driver_state.hpp"

namespace respool::detail {

// Several observers behind one: each event goes to each, in the order they were added; one that throws
// does not keep the event from the others.
class fan_out_observer final : public observer {
public:
    explicit fan_out_observer(std::vector<std::shared_ptr<observer>> all) : all_(std::move(all)) {}
    void on_created() override {
        each([](observer& o) { o.on_created(); });
    }
    void on_create_failed(const error_code& ec) override {
        each([&](observer& o) { o.on_create_failed(ec); });
    }
    void on_destroyed(destroy_reason r) override {
        each([&](observer& o) { o.on_destroyed(r); });
    }
    void on_poisoned() override {
        each([](observer& o) { o.on_poisoned(); });
    }
    void on_taken(std::chrono::nanoseconds w) override {
        each([&](observer& o) { o.on_taken(w); });
    }
    void on_released(std::chrono::nanoseconds h) override {
        each([&](observer& o) { o.on_released(h); });
    }
    void on_exhausted(const pool_stats& s) override {
        each([&](observer& o) { o.on_exhausted(s); });
    }
    void on_circuit_changed(circuit_state c) override {
        each([&](observer& o) { o.on_circuit_changed(c); });
    }
    void on_leak_suspected(std::chrono::nanoseconds h, const respool::source_location& w) override {
        each([&](observer& o) { o.on_leak_suspected(h, w); });
    }
    void on_leak_returned(std::chrono::nanoseconds h, const respool::source_location& w) override {
        each([&](observer& o) { o.on_leak_returned(h, w); });
    }
    void on_creation_retry(const error_code& ec, std::chrono::nanoseconds d) override {
        each([&](observer& o) { o.on_creation_retry(ec, d); });
    }

private:
    template <class F>
    void each(F f) {
        for (auto& o : all_) {
            try {
                f(*o);
            } catch (...) {
            }
        }
    }
    std::vector<std::shared_ptr<observer>> all_;
};

std::shared_ptr<observer> fan_out(const std::vector<std::shared_ptr<observer>>& all) {
    if (all.empty()) return nullptr;
    if (all.size() == 1) return all.front();
    return std::make_shared<fan_out_observer>(all);
}

// Posts a one-shot handler with an error code; the handler decides its own executor.
void fire(std::vector<signal_handler>& hs, const error_code& ec) {
    for (auto& h : hs) h(ec);
    hs.clear();
}

}  // namespace respool::detail
