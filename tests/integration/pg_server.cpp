#include "pg_server.hpp"

#include "close_inherited.hpp"

#include <libpq-fe.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#ifndef RESPOOL_PG_CLUSTER_SCRIPT
#error "RESPOOL_PG_CLUSTER_SCRIPT must name tests/integration/pg_cluster.sh (tests/CMakeLists.txt)"
#endif

namespace test {
namespace {

// The admin connections name themselves so that count_backends can leave them out: a backend whose
// client has finished may still be listed for a moment while it ends.
constexpr const char* admin_name = "respool_test_admin";

std::string read_first_line(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::string line;
    if (!in || !std::getline(in, line) || line.empty())
        throw std::runtime_error("pg_server: cannot read " + file.string() + " (is the cluster started?)");
    return line;
}

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

struct pq_finish {
    void operator()(PGconn* c) const { PQfinish(c); }
};
struct pq_clear {
    void operator()(PGresult* r) const { PQclear(r); }
};

}  // namespace

pg_server::pg_server()
    : pg_server([] {
          const char* file = std::getenv("RESPOOL_PG_CONNINFO_FILE");
          if (!file || !*file)
              throw std::runtime_error("pg_server: RESPOOL_PG_CONNINFO_FILE is not set (run through ctest)");
          return std::filesystem::path(file).parent_path();
      }()) {}

pg_server::pg_server(std::filesystem::path state_dir)
    : state_(std::move(state_dir)), conninfo_(read_first_line(state_ / "conninfo")) {
    const auto at = conninfo_.find("port=");
    if (at == std::string::npos) throw std::runtime_error("pg_server: no port in " + conninfo_);
    port_ = std::stoi(conninfo_.substr(at + 5));
}

bool pg_server::available() {
    const char* file = std::getenv("RESPOOL_PG_CONNINFO_FILE");
    return file && *file && std::ifstream(file).good();
}

// Runs a fixture script (argv[0]) and waits for it (every wait in the scripts is bounded); throws
// std::runtime_error naming `who` and carrying the script's output when it fails. Not through popen:
// the shell would inherit every descriptor of this process (the chaos proxy's sockets among them), and
// so would a server it starts, keeping them open for its lifetime. A proxy's close of such a socket then
// never reaches its client (no FIN, no RST: the server's copy keeps the connection up), and a statement
// sent on it waits for its deadline. The child closes everything but its output before it runs the
// script (close_inherited.hpp).
void run_fixture_script(const std::string& who, std::vector<std::string> args) {
    std::string cmd;
    for (const auto& a : args) cmd += (cmd.empty() ? "" : " ") + shell_quote(a);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    static constexpr char exec_failed[] = "cannot execute the fixture script\n";
    const long open_max = ::sysconf(_SC_OPEN_MAX);
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(who + ": pipe2 failed for " + cmd);
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(out[0]);
        ::close(out[1]);
        throw std::runtime_error(who + ": cannot fork for " + cmd);
    }
    if (pid == 0) {  // async-signal-safe calls only, up to exec
        ::dup2(out[1], 1);
        ::dup2(out[1], 2);
        close_inherited_descriptors(open_max);
        ::execv(argv[0], argv.data());
        (void)!::write(2, exec_failed, sizeof exec_failed - 1);
        ::_exit(127);
    }
    ::close(out[1]);
    std::string output;
    char buf[512];
    for (;;) {
        const ssize_t n = ::read(out[0], buf, sizeof buf);
        if (n > 0)
            output.append(buf, static_cast<std::size_t>(n));
        else if (n == 0 || errno != EINTR)
            break;
    }
    ::close(out[0]);
    int status = 0;
    pid_t waited;
    while ((waited = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
    }
    if (waited != pid)
        throw std::runtime_error(who + ": cannot wait for `" + cmd + "` (errno " + std::to_string(errno) +
                                 "):\n" + output);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw std::runtime_error(who + ": `" + cmd + "` failed (status " + std::to_string(status) + "):\n" +
                                 output);
}

void pg_server::run_script(const std::string& action, std::optional<stop_mode> mode) const {
    std::vector<std::string> args{RESPOOL_PG_CLUSTER_SCRIPT, action, state_.string()};
    if (mode) args.emplace_back(*mode == stop_mode::immediate ? "immediate" : "fast");
    run_fixture_script("pg_server", std::move(args));
}

void pg_server::stop(stop_mode mode) {
    run_script("server-stop", mode);
}
void pg_server::start() {
    run_script("server-start", std::nullopt);
}
void pg_server::restart(stop_mode mode) {
    run_script("server-restart", mode);
}

std::filesystem::path pg_server::log_path() const {
    return read_first_line(state_ / "log");
}

std::size_t pg_server::count_log_lines(std::string_view needle) const {
    std::ifstream in(log_path());
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
    return n;
}

std::vector<pg_server::row> pg_server::query(const std::string& sql,
                                             const std::vector<std::string>& params) const {
    const std::string info = conninfo_ + " application_name=" + admin_name + " connect_timeout=10";
    std::unique_ptr<PGconn, pq_finish> conn(PQconnectdb(info.c_str()));
    if (!conn || PQstatus(conn.get()) != CONNECTION_OK)
        throw std::runtime_error("pg_server: admin connect failed: " +
                                 std::string(conn ? PQerrorMessage(conn.get()) : "out of memory"));
    // Notices (e.g. the WARNING of pg_terminate_backend for an unknown pid) are not test output.
    PQsetNoticeProcessor(
        conn.get(), [](void*, const char*) {}, nullptr);
    std::vector<const char*> values;
    for (const auto& p : params) values.push_back(p.c_str());
    std::unique_ptr<PGresult, pq_clear> res(
        params.empty() ? PQexec(conn.get(), sql.c_str())
                       : PQexecParams(conn.get(), sql.c_str(), static_cast<int>(values.size()), nullptr,
                                      values.data(), nullptr, nullptr, 0));
    const auto status = res ? PQresultStatus(res.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK)
        throw std::runtime_error("pg_server: `" + sql + "` failed: " + PQerrorMessage(conn.get()));
    std::vector<row> rows(static_cast<std::size_t>(PQntuples(res.get())));
    for (int r = 0; r < PQntuples(res.get()); ++r)
        for (int c = 0; c < PQnfields(res.get()); ++c)
            rows[static_cast<std::size_t>(r)].push_back(
                PQgetisnull(res.get(), r, c) ? std::nullopt
                                             : std::optional<std::string>(PQgetvalue(res.get(), r, c)));
    return rows;
}

namespace {
// The client backends a test cares about: not this admin connection, nor an earlier one still ending
// ($1: the admin name), only those named $2 when it is not empty.
constexpr const char* client_backends =
    "FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
    " AND application_name <> $1::text AND ($2::text = '' OR application_name = $2::text)";
}  // namespace

int pg_server::count_backends(const std::string& application_name) const {
    const auto rows =
        query(std::string("SELECT count(*) ") + client_backends, {admin_name, application_name});
    return std::stoi(rows.at(0).at(0).value());
}

std::vector<int> pg_server::backend_pids(const std::string& application_name) const {
    std::vector<int> pids;
    for (const backend& b : backends(application_name)) pids.push_back(b.pid);
    return pids;
}

std::vector<pg_server::backend> pg_server::backends(const std::string& application_name) const {
    std::vector<backend> all;
    for (const auto& r :
         query(std::string("SELECT pid, coalesce(client_port, -1) ") + client_backends + " ORDER BY pid",
               {admin_name, application_name}))
        all.push_back(backend{std::stoi(r.at(0).value()), std::stoi(r.at(1).value())});
    return all;
}

bool pg_server::terminate(int pid) const {
    return query("SELECT pg_terminate_backend($1::int)", {std::to_string(pid)}).at(0).at(0) == "t";
}

void pg_server::wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit,
                           std::string_view what) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() >= deadline)
            throw std::runtime_error("pg_server: timed out after " + std::to_string(limit.count()) +
                                     " ms waiting for " + std::string(what));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

}  // namespace test
