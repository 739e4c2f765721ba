// A cluster's conninfo, split per host: libpq parses it (keyword/value or URI), and each host gets a
// conninfo of its own with every other option unchanged (user, password, dbname, sslmode, ...), so
// that each host's pool connects to that host alone.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace respool::pg::detail {

struct cluster_host {
    std::string name;      // host:port (or hostaddr:port), for messages, logs and metrics: no credential
    std::string conninfo;  // keyword/value form for this host alone
};

// One entry per host, in order. Throws std::invalid_argument (the message masked) when libpq cannot
// parse `conninfo`, or when a host list and a port list of different lengths are given (libpq's rule:
// one port for all, or one per host). target_session_attrs and load_balance_hosts are dropped: the
// cluster chooses hosts itself.
std::vector<cluster_host> split_hosts(std::string_view conninfo);

}  // namespace respool::pg::detail
