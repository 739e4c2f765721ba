// Shared by the SQLite tests: a temporary folder of the test's own (mkdtemp, removed afterwards), and
// a way to run a coroutine on an io_context to its end (its exception rethrown on the test's thread).
#pragma once

#include <respool/sqlite/pool.hpp>

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>

namespace sqlite_test {

namespace asio = boost::asio;
namespace sqlite = respool::sqlite;

class temp_dir {
public:
    temp_dir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "respool-sqlite-XXXXXX").string();
        if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
        path_ = tmpl;
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    [[nodiscard]] std::string file(const std::string& name) const { return (path_ / name).string(); }
    [[nodiscard]] const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// Runs `a` on `io` until it and everything it started are done; rethrows what it threw.
template <class T>
T run(asio::io_context& io, asio::awaitable<T> a) {
    std::exception_ptr error;
    std::optional<T> out;
    asio::co_spawn(io, std::move(a), [&](std::exception_ptr e, T v) {
        error = e;
        if (!e) out.emplace(std::move(v));
    });
    io.run();
    io.restart();
    if (error) std::rethrow_exception(error);
    return std::move(*out);
}
inline void run(asio::io_context& io, asio::awaitable<void> a) {
    std::exception_ptr error;
    bool done = false;
    asio::co_spawn(io, std::move(a), [&](std::exception_ptr e) {
        error = e;
        done = true;
    });
    io.run();
    io.restart();
    if (error) std::rethrow_exception(error);
    if (!done) throw std::logic_error("the coroutine did not finish");
}

inline sqlite::pool_config config(const std::string& path, std::size_t readers = 2) {
    sqlite::pool_config c;
    c.path = path;
    c.readers = readers;
    return c;
}

}  // namespace sqlite_test
