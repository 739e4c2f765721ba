// The ostream log sink: one line per message, whole lines from any thread.
#include <respool/observer.hpp>

#include <mutex>
#include <ostream>

namespace respool {

namespace {
class ostream_sink final : public log_sink {
public:
    ostream_sink(std::ostream& os, log_level min, std::string name)
        : os_(os), min_(min), name_(std::move(name)) {}
    bool enabled(log_level l) const noexcept override { return l >= min_; }
    void log(log_level l, std::string_view message) override {
        std::lock_guard<std::mutex> g(m_);  // one line at a time from any thread
        os_ << name_ << ' ' << to_string(l) << ": " << message << '\n';
        os_.flush();
    }

private:
    std::ostream& os_;
    log_level min_;
    std::string name_;
    std::mutex m_;
};
}  // namespace

std::shared_ptr<log_sink> make_ostream_log_sink(std::ostream& os, log_level min, std::string name) {
    return std::make_shared<ostream_sink>(os, min, std::move(name));
}

const char* to_string(log_level l) noexcept {
    switch (l) {
    case log_level::debug: return "debug";
    case log_level::info: return "info";
    case log_level::warning: return "warning";
    case log_level::error: return "error";
    }
    return "?";
}

}  // namespace respool
