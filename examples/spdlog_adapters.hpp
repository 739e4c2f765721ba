// respool's log sink and statement tracer on spdlog: copy this file into a program that logs with
// spdlog (Debian: libspdlog-dev). Each is a few lines: respool calls them, they call spdlog.
//
//   auto log = spdlog::stdout_color_mt("db");
//   cfg.tracer = std::make_shared<spdlog_tracer>(log, std::chrono::milliseconds(100));
//   pool.base().set_log_sink(std::make_shared<spdlog_sink>(log));   // sqlite: writer_pool(), reader_pool()
#pragma once

#include <respool/observer.hpp>
#include <respool/trace.hpp>

#include <spdlog/logger.h>

#include <chrono>
#include <memory>
#include <string_view>

// The pool's own events (a circuit opening, a leak suspected, the shared budget's changes) as spdlog
// records of the same level.
class spdlog_sink : public respool::log_sink {
public:
    explicit spdlog_sink(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}
    bool enabled(respool::log_level level) const noexcept override {
        return logger_->should_log(to_spdlog(level));
    }
    void log(respool::log_level level, std::string_view message) override {
        logger_->log(to_spdlog(level), message);
    }

private:
    static spdlog::level::level_enum to_spdlog(respool::log_level level) noexcept {
        switch (level) {
        case respool::log_level::debug: return spdlog::level::debug;
        case respool::log_level::info: return spdlog::level::info;
        case respool::log_level::warning: return spdlog::level::warn;
        case respool::log_level::error: return spdlog::level::err;
        }
        return spdlog::level::info;
    }
    std::shared_ptr<spdlog::logger> logger_;
};

// Every statement at debug level, a slow one (at least `slow`) at warn, a failed one at error; the
// pool's own statements (the reset on return) at trace level only.
class spdlog_tracer : public respool::statement_tracer {
public:
    spdlog_tracer(std::shared_ptr<spdlog::logger> logger, std::chrono::nanoseconds slow)
        : logger_(std::move(logger)), slow_(slow) {}
    void on_statement(const respool::statement_trace& t) noexcept override {
        try {
            const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.duration).count();
            if (t.error)
                logger_->error("{} failed after {} us on {}: {}", t.sql, us, t.host, t.message);
            else if (t.pool_statement)
                logger_->trace("{} ({} us, pool's own) on {}", t.sql, us, t.host);
            else
                logger_->log(t.duration >= slow_ ? spdlog::level::warn : spdlog::level::debug,
                             "{} ({} parameters): {} rows in {} us on {} (backend {})", t.sql, t.parameters,
                             t.rows, us, t.host, t.backend_pid);
        } catch (...) {  // spdlog reports its own errors; a tracer must not throw
        }
    }

private:
    std::shared_ptr<spdlog::logger> logger_;
    std::chrono::nanoseconds slow_;
};
