#include "serve_support.hpp"

#include "close_inherited.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bh = boost::beast::http;
using asio::ip::tcp;

namespace serve_test {

namespace {

response to_response(const bh::response<bh::string_body>& msg) {
    response r;
    r.status = msg.result_int();
    r.body = msg.body();
    r.keep_alive = msg.keep_alive();
    for (const auto& f : msg) {
        std::string name(f.name_string());
        for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        r.headers[name] = std::string(f.value());
    }
    return r;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int decode_status(int status) {
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

serve_process::serve_process(std::vector<std::string> args) {
    char err_template[] = "/tmp/respool-serve-stderr.XXXXXX";
    const int err_fd = mkstemp(err_template);
    if (err_fd < 0) throw std::runtime_error("mkstemp failed");
    err_path_ = err_template;
    int out[2];
    if (pipe(out) != 0) throw std::runtime_error("pipe failed");
    std::vector<std::string> argv_store{RESPOOL_CLI};
    argv_store.insert(argv_store.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_store) argv.push_back(a.data());
    argv.push_back(nullptr);
    const long open_max = sysconf(_SC_OPEN_MAX);
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
        dup2(out[1], 1);
        dup2(err_fd, 2);
        test::close_inherited_descriptors(open_max);
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(out[1]);
    close(err_fd);
    out_fd_ = out[0];
}

serve_process::~serve_process() {
    if (!status_ && pid_ > 0) {
        kill(pid_, SIGKILL);
        int status = 0;
        waitpid(pid_, &status, 0);
    }
    if (out_fd_ >= 0) close(out_fd_);
    std::remove(err_path_.c_str());
}

std::string serve_process::read_line(std::chrono::milliseconds limit) {
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
        const auto nl = pending_.find('\n');
        if (nl != std::string::npos) {
            std::string line = pending_.substr(0, nl);
            pending_.erase(0, nl + 1);
            return line;
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
        if (left.count() <= 0)
            throw std::runtime_error("respool printed no line within the limit; stderr:\n" + stderr_text());
        pollfd p{out_fd_, POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
        char buf[4096];
        const auto n = read(out_fd_, buf, sizeof buf);
        if (n <= 0)
            throw std::runtime_error("respool closed its stdout (exited?); stderr:\n" + stderr_text());
        pending_.append(buf, static_cast<std::size_t>(n));
    }
}

std::uint16_t serve_process::wait_listening() {
    const std::string line = read_line();
    const std::string prefix = "listening on http://127.0.0.1:";
    if (line.rfind(prefix, 0) != 0) throw std::runtime_error("unexpected ready line: " + line);
    return static_cast<std::uint16_t>(std::stoul(line.substr(prefix.size())));
}

void serve_process::signal(int sig) const {
    kill(pid_, sig);
}

std::optional<int> serve_process::wait_exit(std::chrono::milliseconds limit) {
    if (status_) return status_;
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
        int status = 0;
        const pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            status_ = decode_status(status);
            return status_;
        }
        if (std::chrono::steady_clock::now() > end) {
            kill(pid_, SIGKILL);
            waitpid(pid_, &status, 0);
            status_ = -1;
            return std::nullopt;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // a poll interval
    }
}

std::string serve_process::stderr_text() const {
    return read_file(err_path_);
}

std::string serve_process::stdout_rest() {
    std::string out = std::move(pending_);
    pending_.clear();
    for (;;) {
        pollfd p{out_fd_, POLLIN, 0};
        if (poll(&p, 1, 0) <= 0) break;
        char buf[4096];
        const auto n = read(out_fd_, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

std::pair<int, std::string> run_to_exit(std::vector<std::string> args) {
    serve_process p(std::move(args));
    const auto status = p.wait_exit(std::chrono::seconds(30));
    return {status.value_or(-1), p.stderr_text() + p.stdout_rest()};
}

struct client::impl {
    asio::io_context io;
    tcp::socket socket{io};
    beast::flat_buffer buffer;
    std::uint16_t port;

    void connect(int& connects) {
        socket = tcp::socket(io);
        buffer.clear();
        socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
        // A server that hangs fails the test (the read fails) instead of blocking it forever.
        timeval tv{30, 0};
        setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        ++connects;
    }

    response read_response() {
        bh::response_parser<bh::string_body> parser;
        parser.body_limit(64 * 1024 * 1024);
        bh::read(socket, buffer, parser);
        return to_response(parser.get());
    }
};

client::client(std::uint16_t port) : impl_(std::make_unique<impl>()) {
    impl_->port = port;
}
client::~client() = default;

response client::request(const std::string& method, const std::string& target, const std::string& body) {
    if (!impl_->socket.is_open()) impl_->connect(connects_);
    bh::request<bh::string_body> req;
    req.version(11);
    const auto verb = bh::string_to_verb(method);
    if (verb == bh::verb::unknown)
        req.method_string(method);
    else
        req.method(verb);
    req.target(target);
    req.set(bh::field::host, "127.0.0.1");
    req.body() = body;
    req.prepare_payload();
    bh::write(impl_->socket, req);
    response r = impl_->read_response();
    if (!r.keep_alive) impl_->socket.close();
    return r;
}

response client::raw(const std::string& bytes) {
    impl_->connect(connects_);
    asio::write(impl_->socket, asio::buffer(bytes));
    response r = impl_->read_response();
    impl_->socket.close();
    return r;
}

conversation converse(std::uint16_t port, const std::string& bytes, std::chrono::seconds limit) {
    asio::io_context io;
    tcp::socket socket(io);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    timeval tv{static_cast<time_t>(limit.count()), 0};
    setsockopt(socket.native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    beast::error_code ignored;  // a server that refused early may close before all is written
    asio::write(socket, asio::buffer(bytes), ignored);

    conversation out;
    std::string received;
    const auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
        if (left.count() <= 0) break;
        pollfd p{socket.native_handle(), POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
        char buf[16384];
        const auto n = recv(socket.native_handle(), buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET)) {
            out.closed = true;
            break;
        }
        if (n < 0) break;
        received.append(buf, static_cast<std::size_t>(n));
    }

    std::size_t at = 0;
    while (at < received.size()) {
        bh::response_parser<bh::string_body> parser;
        parser.body_limit(64 * 1024 * 1024);
        parser.eager(true);
        beast::error_code ec;
        const std::size_t n = parser.put(asio::buffer(received.data() + at, received.size() - at), ec);
        if (ec || !parser.is_done()) break;  // cut short or not HTTP: left in `trailing`
        out.responses.push_back(to_response(parser.get()));
        at += n;
    }
    out.trailing = received.substr(at);
    return out;
}

std::optional<std::chrono::milliseconds> time_until_closed(std::uint16_t port, const std::string& bytes,
                                                           std::chrono::seconds limit) {
    asio::io_context io;
    tcp::socket socket(io);
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    timeval tv{static_cast<time_t>(limit.count()), 0};
    setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const auto t0 = std::chrono::steady_clock::now();
    if (!bytes.empty()) asio::write(socket, asio::buffer(bytes));
    char buf[4096];
    for (;;) {  // a response may come first (a 408 would be fine too); the end of the stream is the answer
        const auto n = recv(socket.native_handle(), buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno == ECONNRESET))
            return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                         t0);
        if (n < 0) return std::nullopt;  // the receive timeout: still open
    }
}

void wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit, const std::string& what) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > end) throw std::runtime_error("timed out waiting for " + what);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));  // a poll interval, not a guess
    }
}

temp_dir::temp_dir() {
    char tmpl[] = "/tmp/respool-serve-test.XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
    path = tmpl;
}
temp_dir::~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
}

std::optional<double> sample(const std::string& exposition, const std::string& name_and_labels) {
    std::istringstream in(exposition);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(name_and_labels + " ", 0) == 0)
            return std::stod(line.substr(name_and_labels.size() + 1));
    return std::nullopt;
}

std::string promtool_problems(const std::string& text) {
    temp_dir dir;
    const std::string file = dir.path + "/metrics.txt";
    std::ofstream(file, std::ios::binary) << text;
    const std::string cmd = std::string(RESPOOL_PROMTOOL) + " check metrics < " + file + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return "cannot run " + cmd;
    std::string out;
    char buf[512];
    while (const auto n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
    const int status = pclose(p);
    if (status == 0) return {};
    return "promtool exit " + std::to_string(status) + ": " + out;
}

}  // namespace serve_test
