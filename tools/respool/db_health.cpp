#include "db_health.hpp"

#include "log.hpp"

#include <respool/http/status.hpp>
#include <respool/pg/errors.hpp>
#include <respool/sqlite/errors.hpp>

#include <algorithm>
#include <cctype>

namespace respool_cli {
namespace {

bool contains(std::string_view text, std::string_view part) {
    auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
    return std::search(text.begin(), text.end(), part.begin(), part.end(),
                       [&](char a, char b) { return lower(a) == lower(b); }) != text.end();
}

// The cause, from the code first (SQLSTATE, the drivers' own errors), then libpq's wording, which is
// all a failed connect has (libpq gives no SQLSTATE for it).
std::string_view cause_of(const respool::error_code& ec, std::string_view words) {
    namespace pg = respool::pg;
    namespace sqlite = respool::sqlite;
    const std::string state = pg::sqlstate_of(ec);
    if (ec == pg::error::authentication_failed || state == "28P01" || state == "28000" ||
        contains(words, "password authentication failed") || contains(words, "authentication failed"))
        return "authentication failed";
    if (state == "53300" || contains(words, "too many clients") ||
        contains(words, "remaining connection slots are reserved"))
        return "too many connections";
    if (state == "57P01" || state == "57P02" || state == "57P03" || contains(words, "the database system is"))
        return "server shutting down or starting up";
    if (contains(words, "could not translate host name") || contains(words, "could not resolve host") ||
        contains(words, "Name or service not known") ||
        contains(words, "Temporary failure in name resolution"))
        return "DNS: host name not resolved";
    if (contains(words, "invalid") && contains(words, "value"))  // e.g. invalid sslmode value
        return "invalid connection option";
    if (contains(words, "SSL") || contains(words, "TLS") || contains(words, "certificate"))
        return "TLS failure";
    if (contains(words, "Connection refused")) return "connection refused";
    if (ec == pg::error::connect_timeout || contains(words, "timeout expired") ||
        contains(words, "timed out"))
        return "connect timeout";
    if (ec == sqlite::condition::cant_open) return "database file cannot be opened";
    if (ec == sqlite::condition::corrupt) return "database file damaged or not a database";
    if (ec == respool::errc::unavailable) return "circuit open";
    if (ec == pg::condition::connection_broken) return "connection lost";
    return "database unavailable";
}

std::string seconds_text(std::chrono::steady_clock::duration d) {
    const double s = std::chrono::duration<double>(d).count();
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f s", s);
    return buf;
}

}  // namespace

std::string classify(const respool::error_code& ec, std::string_view words) {
    std::string out(cause_of(ec, words));
    // The words end with the code's message in brackets (pg::describe): the cause says it already.
    const std::string tail = " (" + ec.message() + ")";
    if (words.size() > tail.size() && words.substr(words.size() - tail.size()) == tail)
        words.remove_suffix(tail.size());
    const std::string w = log::one_line(words.empty() ? std::string_view(ec.message()) : words);
    if (!w.empty() && w != out) out += ": " + w;
    return out;
}

db_health::db_health(std::size_t workers, std::chrono::steady_clock::duration summary_every)
    : down_(workers, false), summary_every_(summary_every) {}

void db_health::failed(std::size_t w, const std::string& reason) {
    const auto now = std::chrono::steady_clock::now();
    std::string line;
    log::level lv = log::level::warn;
    {
        std::lock_guard<std::mutex> g(m_);
        if (w >= down_.size()) return;
        if (reason.empty() && !down_[w]) return;
        if (!down_[w]) {
            down_[w] = true;
            if (down_count_++ == 0) {  // the outage begins
                reason_ = reason;
                since_ = std::chrono::system_clock::now();
                began_ = now;
                window_start_ = now;
                failures_ = 0;
                total_failures_ = 1;
                connects_ = 0;
                lv = log::level::error;
                line = "database unreachable: " + reason;
            }
        }
        if (line.empty()) {
            if (!reason.empty()) reason_ = reason;
            ++failures_;
            ++total_failures_;
            if (now - window_start_ >= summary_every_) {
                line = "database still unreachable: " + std::to_string(failures_) + " failures (" +
                       std::to_string(connects_) + " connect attempts) in the last " +
                       seconds_text(now - window_start_) + ", down for " + seconds_text(now - began_) + ": " +
                       reason_;
                window_start_ = now;
                failures_ = 0;
                connects_ = 0;
            }
        }
    }
    if (!line.empty()) log::write(lv, line);
}

void db_health::answered(std::size_t w) {
    const auto now = std::chrono::steady_clock::now();
    std::string line;
    {
        std::lock_guard<std::mutex> g(m_);
        if (w >= down_.size() || !down_[w]) return;
        down_[w] = false;
        if (--down_count_ == 0) {
            line = "database reachable again after " + seconds_text(now - began_) + " (" +
                   std::to_string(total_failures_) + " failures); it was: " + reason_;
            reason_.clear();
        }
    }
    if (!line.empty()) log::info(line);
}

void db_health::connect_failed() noexcept {
    std::lock_guard<std::mutex> g(m_);
    ++connects_;
}

db_health::view db_health::snapshot() const {
    std::lock_guard<std::mutex> g(m_);
    return {down_count_ > 0, reason_, down_count_ > 0 ? since_ : started_};
}

namespace {

class pool_observer final : public respool::observer {
public:
    pool_observer(db_health& h, std::string name) : h_(h), name_(std::move(name)) {}
    void on_create_failed(const respool::error_code&) override { h_.connect_failed(); }
    // The circuit opens (warn) and closes (info) once per outage; its probes in between (half-open,
    // open again after a failed probe: one pair per cool-down) are debug, so a long outage is not a
    // line a second.
    void on_circuit_changed(respool::circuit_state s) override {
        switch (s) {
        case respool::circuit_state::open:
            if (open_) return log::debug("pool " + name_ + ": circuit open again: the probe connect failed");
            open_ = true;
            return log::warn("pool " + name_ +
                             ": circuit open: requests fail fast (503) until a probe connect succeeds");
        case respool::circuit_state::half_open:
            return log::debug("pool " + name_ + ": circuit half-open: probing");
        case respool::circuit_state::closed:
            open_ = false;
            return log::info("pool " + name_ + ": circuit closed: connecting again");
        }
    }

private:
    db_health& h_;
    std::string name_;
    bool open_ = false;  // the pool's own thread only
};

class pool_sink final : public respool::log_sink {
public:
    explicit pool_sink(std::string name) : name_(std::move(name)) {}
    bool enabled(respool::log_level) const noexcept override { return log::enabled(log::level::debug); }
    void log(respool::log_level, std::string_view message) override {
        log::debug("pool " + name_ + ": " + std::string(message));
    }

private:
    std::string name_;
};

}  // namespace

std::shared_ptr<respool::observer> make_pool_observer(db_health& h, std::string pool_name) {
    return std::make_shared<pool_observer>(h, std::move(pool_name));
}
std::shared_ptr<respool::log_sink> make_pool_log_sink(std::string pool_name) {
    return std::make_shared<pool_sink>(std::move(pool_name));
}

}  // namespace respool_cli
