// What libpq is told to connect to once respool has resolved the host names itself (connect.cpp: the
// lookup is asynchronous, libpq's would block the event loop): the host, hostaddr and port options.
#pragma once

#include <string>
#include <vector>

namespace respool::pg::detail {

struct libpq_targets {
    std::string host;      // each host name once per address it resolved to
    std::string hostaddr;  // the addresses, in the resolver's order ("" beside a socket folder)
    std::string port;      // the port option, one entry per address when it had one per host
};

// `hosts`: the host option's entries; `addrs[i]`: what hosts[i] resolved to (one "" for a socket
// folder); `port`: the port option as given (empty, one port for all, or one per host).
libpq_targets targets_of(const std::vector<std::string>& hosts,
                         const std::vector<std::vector<std::string>>& addrs, const std::string& port);

}  // namespace respool::pg::detail
