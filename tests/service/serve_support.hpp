// What the `respool serve` integration tests share: the real binary started as a child process (its
// ready line read from stdout with a bound, its stderr kept in a file), and a small blocking HTTP/1.1
// client on Beast (keep-alive, socket timeouts so that a hang fails the test instead of blocking it).
// Everything blocks the calling thread and is bounded; nothing sleeps on a guessed time.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace serve_test {

// A respool process. The destructor kills it (SIGKILL) when a test left it running.
class serve_process {
public:
    // Starts `respool <args...>` (RESPOOL_CLI) with stdout on a pipe and stderr in a temporary file.
    explicit serve_process(std::vector<std::string> args);
    ~serve_process();
    serve_process(const serve_process&) = delete;
    serve_process& operator=(const serve_process&) = delete;

    // Reads stdout up to the first line (at most `limit`); throws std::runtime_error with stderr when
    // the process exits or stays silent. Returns the line without its newline.
    std::string read_line(std::chrono::milliseconds limit = std::chrono::seconds(30));
    // read_line(), checked to be "listening on http://127.0.0.1:PORT"; returns PORT.
    std::uint16_t wait_listening();

    void signal(int sig) const;
    // Waits for the exit (at most `limit`; SIGKILL and nullopt after it): the exit status, or
    // 128 + the signal's number when a signal ended it.
    std::optional<int> wait_exit(std::chrono::milliseconds limit = std::chrono::seconds(30));

    std::string stderr_text() const;  // everything written to stderr so far
    std::string stdout_rest();        // stdout after the ready line (after wait_exit: all of it)
    pid_t pid() const { return pid_; }

private:
    pid_t pid_ = -1;
    int out_fd_ = -1;
    std::string err_path_;
    std::string pending_;  // stdout read but not yet returned
    std::optional<int> status_;
};

// Runs `respool <args...>` to its end (bounded) and returns {exit status, stderr + stdout}.
std::pair<int, std::string> run_to_exit(std::vector<std::string> args);

struct response {
    unsigned status = 0;
    std::string body;
    std::map<std::string, std::string> headers;  // lower-case names
    bool keep_alive = true;
    std::string header(const std::string& name) const {
        auto it = headers.find(name);
        return it == headers.end() ? std::string() : it->second;
    }
};

// One keep-alive connection to 127.0.0.1:port, reconnected when the server closed it.
class client {
public:
    explicit client(std::uint16_t port);
    ~client();
    client(const client&) = delete;
    client& operator=(const client&) = delete;

    response request(const std::string& method, const std::string& target, const std::string& body = {});
    // Sends `raw` bytes as they are and reads one response (a malformed request, say).
    response raw(const std::string& bytes);
    int connects() const { return connects_; }  // connections opened so far

private:
    struct impl;
    std::unique_ptr<impl> impl_;
    int connects_ = 0;
};

// What one raw connection got back: every whole response, in order, and how the connection ended.
struct conversation {
    std::vector<response> responses;
    bool closed = false;   // the server closed the connection (end of stream) within the limit
    std::string trailing;  // bytes after the last whole response (none from a well-behaved server)
};

// Connects, sends `bytes` as they are without closing its own side (a server that waits for more
// waits), and reads until the server closes the connection or `limit` passes.
conversation converse(std::uint16_t port, const std::string& bytes,
                      std::chrono::seconds limit = std::chrono::seconds(10));

// Connects, sends `bytes` (maybe an incomplete request) and waits (at most `limit`) for the server to
// close the connection; returns how long that took, or nullopt when it did not close in time.
std::optional<std::chrono::milliseconds> time_until_closed(std::uint16_t port, const std::string& bytes,
                                                           std::chrono::seconds limit);

// Polls `done` every 10 ms until true; throws std::runtime_error naming `what` after `limit`.
void wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit, const std::string& what);

// A fresh temporary folder, removed with its contents by the destructor.
struct temp_dir {
    temp_dir();
    ~temp_dir();
    std::string path;
};

// The value of the sample `name{labels}` in a Prometheus text, or nullopt.
std::optional<double> sample(const std::string& exposition, const std::string& name_and_labels);
// `promtool check metrics` on `text`: its output when it fails, empty when it passes.
std::string promtool_problems(const std::string& text);

}  // namespace serve_test
