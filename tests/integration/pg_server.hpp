// Test-side control of the throwaway PostgreSQL server of a pg_cluster fixture
// (tests/integration/pg_cluster.sh): stop, start and restart it on the same port, socket folder and
// data folder (connection strings taken before stay valid), and look at it from the outside through
// libpq's blocking API (an "admin" connection of its own per call).
//
// Everything here blocks the calling thread: call it from the test's thread, never from a handler on
// an io_context the code under test needs. Every call is bounded: pg_ctl waits at most 60 s, the admin
// connections carry connect_timeout=10, wait_until takes a hard limit.
//
// Stopping a server disturbs every test that uses it: tests that stop, restart or terminate use the
// pg_cluster_faults fixture, a cluster of their own (tests/CMakeLists.txt).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace test {

// Runs a fixture script: args[0] is its path, the rest its arguments; waits for it and throws
// std::runtime_error (naming `who`, with the script's output) when it fails. The child inherits no
// descriptor of this process but its output.
void run_fixture_script(const std::string& who, std::vector<std::string> args);

class pg_server {
public:
    // How pg_ctl stops the server. fast: every backend is told to end (its client gets a FATAL
    // 57P01 admin_shutdown, then EOF), a checkpoint is written. immediate: every server process gets
    // SIGQUIT and exits at once (a backend may still send its client a last FATAL), no checkpoint,
    // crash recovery at the next start.
    enum class stop_mode { fast, immediate };

    using row = std::vector<std::optional<std::string>>;  // std::nullopt for SQL NULL

    // The state folder is the folder of the file named by RESPOOL_PG_CONNINFO_FILE (what ctest sets
    // for the integration tests). Throws std::runtime_error when it is unset or the cluster is not
    // started; tests that may run outside ctest check available() first and skip.
    pg_server();
    explicit pg_server(std::filesystem::path state_dir);

    static bool available();  // RESPOOL_PG_CONNINFO_FILE names a readable file

    // pg_cluster.sh server-stop / server-start / server-restart, synchronously. Throws
    // std::runtime_error carrying the script's output when it fails (e.g. stop, or restart, of a
    // stopped server).
    void stop(stop_mode mode = stop_mode::fast);
    void start();
    void restart(stop_mode mode = stop_mode::fast);

    const std::string& conninfo() const { return conninfo_; }  // the same across stops and starts
    int port() const { return port_; }
    const std::filesystem::path& state_dir() const { return state_; }
    std::filesystem::path log_path() const;  // the server log, kept across restarts

    // Lines of the server log containing `needle`, e.g. "connection received: host=127.0.0.1" counts
    // connection attempts (log_connections=on), including the admin connections of this class.
    std::size_t count_log_lines(std::string_view needle) const;

    // Runs `sql` (simple protocol, or with text parameters $1, $2... when `params` is not empty) on a
    // fresh connection (application_name=respool_test_admin) closed before returning; every row as
    // text. Throws std::runtime_error with libpq's message when the connect or the statement fails.
    std::vector<row> query(const std::string& sql, const std::vector<std::string>& params = {}) const;

    // Client backends in pg_stat_activity, this class's admin connections excluded (also ones still
    // ending after an earlier call); only those with this application_name when it is not empty.
    int count_backends(const std::string& application_name = {}) const;

    // Backend pids (client backends, admin connections excluded), optionally by application_name.
    std::vector<int> backend_pids(const std::string& application_name = {}) const;

    // The same backends with the TCP port of their client (pg_stat_activity.client_port; -1 over a
    // Unix socket).
    struct backend {
        int pid;
        int client_port;
    };
    std::vector<backend> backends(const std::string& application_name = {}) const;

    // pg_terminate_backend(pid): true when the signal was sent (false: no such backend). The backend
    // ends asynchronously: wait_until(count_backends... or pid gone) for it to be gone.
    bool terminate(int pid) const;

    // Polls `done` every 10 ms until it holds; throws std::runtime_error naming `what` once `limit` has
    // passed. For waiting on server state (a backend gone, a connection counted), never on a guess.
    static void wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit,
                           std::string_view what = "condition");

private:
    void run_script(const std::string& action, std::optional<stop_mode> mode) const;

    std::filesystem::path state_;
    std::string conninfo_;
    int port_ = 0;
};

}  // namespace test
