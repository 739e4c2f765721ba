// The option lists libpq gets for hosts respool resolved (connect_targets.hpp). libpq tries every
// address in turn, with the host name beside each for TLS and messages; a host that resolved to
// several addresses appears once per address.
#include "connect_targets.hpp"

#include <string>

namespace respool::pg::detail {

libpq_targets targets_of(const std::vector<std::string>& hosts,
                         const std::vector<std::vector<std::string>>& addrs, const std::string& port) {
    // One port per host (libpq accepts one for all, or exactly one per host): the host's own beside
    // each of its addresses.
    std::vector<std::string> per_host;
    if (port.find(',') != std::string::npos)
        for (std::size_t b = 0;;) {
            const auto e = port.find(',', b);
            per_host.push_back(port.substr(b, e == std::string::npos ? std::string::npos : e - b));
            if (e == std::string::npos) break;
            b = e + 1;
        }
    if (per_host.size() != hosts.size()) per_host.clear();  // not one per host: libpq says so
    libpq_targets t;
    if (per_host.empty()) t.port = port;
    bool first = true;
    for (std::size_t i = 0; i < hosts.size(); ++i)
        for (const std::string& a : addrs[i]) {
            if (!first) {
                t.host += ',';
                t.hostaddr += ',';
                if (!per_host.empty()) t.port += ',';
            }
            first = false;
            t.host += hosts[i];
            t.hostaddr += a;
            if (!per_host.empty()) t.port += per_host[i];
        }
    return t;
}

}  // namespace respool::pg::detail
