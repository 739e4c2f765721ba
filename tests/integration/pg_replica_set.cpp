#include "pg_replica_set.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#ifndef RESPOOL_PG_REPLICAS_SCRIPT
#error "RESPOOL_PG_REPLICAS_SCRIPT must name tests/integration/pg_replicas.sh (tests/CMakeLists.txt)"
#endif

namespace test {
namespace {

std::string read_first_line(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::string line;
    if (!in || !std::getline(in, line) || line.empty())
        throw std::runtime_error("pg_replica_set: cannot read " + file.string() +
                                 " (is the cluster started?)");
    return line;
}

// A process that exists and is not a zombie (an ended process its parent has not reaped yet).
bool alive(int pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!stat || !std::getline(stat, text)) return false;
    const auto after_name = text.rfind(')');  // the name, in parentheses, may hold spaces
    return after_name != std::string::npos && after_name + 2 < text.size() && text[after_name + 2] != 'Z';
}

int parent_of(int pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!stat || !std::getline(stat, text)) return 0;
    const auto after_name = text.rfind(')');
    if (after_name == std::string::npos) return 0;
    std::istringstream rest(text.substr(after_name + 1));
    char state = 0;
    int ppid = 0;
    rest >> state >> ppid;
    return ppid;
}

}  // namespace

pg_replica_set::pg_replica_set()
    : pg_replica_set([] {
          const char* file = std::getenv("RESPOOL_PG_REPLICAS_FILE");
          if (!file || !*file)
              throw std::runtime_error(
                  "pg_replica_set: RESPOOL_PG_REPLICAS_FILE is not set (run through ctest)");
          return std::filesystem::path(file).parent_path();
      }()) {}

pg_replica_set::pg_replica_set(std::filesystem::path state_dir)
    : state_(std::move(state_dir)),
      conninfo_(read_first_line(state_ / "conninfo")),
      url_(read_first_line(state_ / "url")) {
    const int n = std::stoi(read_first_line(state_ / "nodes"));
    for (int i = 0; i < n; ++i) nodes_.emplace_back(state_ / ("node" + std::to_string(i)));
}

bool pg_replica_set::available() {
    const char* file = std::getenv("RESPOOL_PG_REPLICAS_FILE");
    return file && *file && std::ifstream(file).good();
}

const pg_server& pg_replica_set::node(int i) const {
    if (i < 0 || i >= nodes())
        throw std::out_of_range("pg_replica_set: no node " + std::to_string(i) + " (the cluster has " +
                                std::to_string(nodes()) + ")");
    return nodes_[static_cast<std::size_t>(i)];
}

int pg_replica_set::port(int i) const {
    return node(i).port();
}
std::string pg_replica_set::conninfo(int i) const {
    return node(i).conninfo();
}
std::string pg_replica_set::conninfo_with_ports(const std::vector<int>& ports) const {
    if (ports.empty()) throw std::invalid_argument("pg_replica_set: conninfo_with_ports needs a port");
    std::string hosts, port_list;
    for (int p : ports) {
        hosts += (hosts.empty() ? "" : ",") + std::string("127.0.0.1");
        port_list += (port_list.empty() ? "" : ",") + std::to_string(p);
    }
    // The node's own conninfo without its host and port: dbname, user, password.
    std::string rest;
    std::istringstream words(conninfo(0));
    for (std::string word; words >> word;)
        if (word.rfind("host=", 0) != 0 && word.rfind("port=", 0) != 0) rest += " " + word;
    return "host=" + hosts + " port=" + port_list + rest;
}

std::filesystem::path pg_replica_set::log_path(int i) const {
    return node(i).log_path();
}
std::size_t pg_replica_set::count_log_lines(int i, std::string_view needle) const {
    return node(i).count_log_lines(needle);
}

// Runs tests/integration/pg_replicas.sh and waits for it (every wait in it is bounded).
void pg_replica_set::run_script(const std::vector<std::string>& args) const {
    std::vector<std::string> argv{RESPOOL_PG_REPLICAS_SCRIPT, args.at(0), state_.string()};
    argv.insert(argv.end(), args.begin() + 1, args.end());
    run_fixture_script("pg_replica_set", std::move(argv));
}

std::string pg_replica_set::index(int i) const {
    node(i);  // throws when i names no node
    return std::to_string(i);
}

void pg_replica_set::promote(int i) {
    run_script({"promote", index(i)});
}
void pg_replica_set::crash(int i) {
    run_script({"crash", index(i)});
}
void pg_replica_set::stop(int i, stop_mode mode) {
    run_script({"stop-node", index(i), mode == stop_mode::immediate ? "immediate" : "fast"});
}
void pg_replica_set::start(int i) {
    run_script({"start-node", index(i)});
}
void pg_replica_set::rejoin(int i, int j) {
    run_script({"rejoin", index(i), index(j)});
}
void pg_replica_set::set_delay(int i, std::chrono::milliseconds delay) {
    if (delay.count() < 0)
        throw std::invalid_argument("pg_replica_set: a negative apply delay (" +
                                    std::to_string(delay.count()) + " ms) for node " + std::to_string(i));
    run_script({"delay", index(i), std::to_string(delay.count()) + "ms"});
}

std::vector<pg_replica_set::row> pg_replica_set::query(int i, const std::string& sql,
                                                       const std::vector<std::string>& params) const {
    return node(i).query(sql, params);
}

bool pg_replica_set::in_recovery(int i) const {
    return query(i, "SELECT pg_is_in_recovery()").at(0).at(0) == "t";
}

bool pg_replica_set::answers(int i) const {
    try {
        query(i, "SELECT 1");
        return true;
    } catch (const std::runtime_error&) {
        return false;
    }
}

int pg_replica_set::count_backends(int i, const std::string& application_name) const {
    return node(i).count_backends(application_name);
}

std::vector<int> pg_replica_set::processes(int i) const {
    std::vector<int> pids;
    const auto dir = read_first_line(state_ / ("node" + index(i)) / "dir");
    std::ifstream pidfile(std::filesystem::path(dir) / "postmaster.pid");
    int postmaster = 0;
    if (!(pidfile >> postmaster) || postmaster <= 0 || !alive(postmaster)) return pids;
    // After a crash the file stays and its pid may be another program's: the postmaster was started
    // with -D <its data folder>.
    std::ifstream cmdline("/proc/" + std::to_string(postmaster) + "/cmdline");
    bool ours = false;
    for (std::string arg; std::getline(cmdline, arg, '\0');) ours = ours || arg == dir;
    if (!ours) return pids;
    pids.push_back(postmaster);
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
        const auto name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        const int pid = std::stoi(name);
        if (parent_of(pid) == postmaster && alive(pid)) pids.push_back(pid);
    }
    return pids;
}

void pg_replica_set::wait_replayed(int standby, int primary, std::chrono::milliseconds limit) const {
    const auto target = query(primary, "SELECT pg_current_wal_insert_lsn()").at(0).at(0).value();
    query(primary, "CHECKPOINT");  // flushes the WAL up to target (and beyond), so that it streams
    wait_until(
        [&] {
            return query(standby, "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)", {target})
                       .at(0)
                       .at(0) == "t";
        },
        limit,
        "node" + std::to_string(standby) + " to replay node" + std::to_string(primary) + "'s WAL up to " +
            target);
}

bool pg_replica_set::streams_to(int primary, int standby) const {
    return query(
               primary,
               "SELECT count(*) FROM pg_stat_replication WHERE application_name = $1 AND state = 'streaming'",
               {"node" + std::to_string(standby)})
               .at(0)
               .at(0) != "0";
}

void pg_replica_set::restore_layout() {
    for (int i = 0; i < nodes(); ++i) {
        if (answers(i)) continue;
        if (processes(i).empty())
            start(i);
        else  // running but not answering yet (still starting up)
            wait_until([&] { return answers(i); }, std::chrono::seconds(60),
                       "node" + std::to_string(i) + " to take connections");
    }
    if (in_recovery(0)) promote(0);
    for (int i = 1; i < nodes(); ++i) {
        if (!in_recovery(i) || !streams_to(0, i)) rejoin(i, 0);
        if (query(i, "SELECT setting FROM pg_settings WHERE name = 'recovery_min_apply_delay'").at(0).at(0) !=
            "0")
            set_delay(i, std::chrono::milliseconds(0));
    }
    wait_until(
        [&] {
            for (int i = 1; i < nodes(); ++i)
                if (!streams_to(0, i)) return false;
            return true;
        },
        std::chrono::seconds(60), "node0 to stream to every standby");
}

}  // namespace test
