#include "cluster_hosts.hpp"

#include <respool/pg/errors.hpp>

#include <libpq-fe.h>

#include <algorithm>
#include <memory>
#include <stdexcept>

namespace respool::pg::detail {

namespace {

std::vector<std::string> split_list(const char* v) {
    std::vector<std::string> out;
    if (!v || !*v) return out;
    std::string_view s(v);
    for (;;) {
        const auto comma = s.find(',');
        out.emplace_back(s.substr(0, comma));
        if (comma == std::string_view::npos) break;
        s.remove_prefix(comma + 1);
    }
    return out;
}

// key='value', with libpq's quoting (backslash before ' and \).
void append_option(std::string& out, std::string_view key, std::string_view value) {
    if (!out.empty()) out += ' ';
    out.append(key);
    out += "='";
    for (char ch : value) {
        if (ch == '\'' || ch == '\\') out += '\\';
        out += ch;
    }
    out += '\'';
}

}  // namespace

std::vector<cluster_host> split_hosts(std::string_view conninfo) {
    char* err = nullptr;
    const std::string text(conninfo);
    std::unique_ptr<PQconninfoOption, decltype(&PQconninfoFree)> opts(PQconninfoParse(text.c_str(), &err),
                                                                      &PQconninfoFree);
    if (!opts) {
        std::string why = err ? err : "out of memory";
        if (err) PQfreemem(err);
        while (!why.empty() && why.back() == '\n') why.pop_back();
        throw std::invalid_argument("conninfo \"" + masked(conninfo) + "\": " + why);
    }
    std::vector<std::string> hosts, addrs, ports;
    std::string common;
    for (const PQconninfoOption* o = opts.get(); o->keyword; ++o) {
        const std::string_view key = o->keyword;
        if (key == "host")
            hosts = split_list(o->val);
        else if (key == "hostaddr")
            addrs = split_list(o->val);
        else if (key == "port")
            ports = split_list(o->val);
        else if (key == "target_session_attrs" || key == "load_balance_hosts")
            continue;
        else if (o->val)
            append_option(common, key, o->val);
    }
    const std::size_t n = std::max<std::size_t>({hosts.size(), addrs.size(), 1});
    auto bad = [&](const std::string& why) {
        throw std::invalid_argument("conninfo \"" + masked(conninfo) + "\": " + why);
    };
    if (!hosts.empty() && !addrs.empty() && hosts.size() != addrs.size())
        bad("host lists " + std::to_string(hosts.size()) + " entries, hostaddr " +
            std::to_string(addrs.size()));
    if (ports.size() > 1 && ports.size() != n)
        bad(std::to_string(ports.size()) + " ports for " + std::to_string(n) + " hosts");
    std::vector<cluster_host> out;
    for (std::size_t i = 0; i < n; ++i) {
        std::string info = common;
        const std::string host = i < hosts.size() ? hosts[i] : std::string();
        const std::string addr = i < addrs.size() ? addrs[i] : std::string();
        const std::string port = ports.empty() ? std::string() : ports.size() == 1 ? ports[0] : ports[i];
        if (!host.empty()) append_option(info, "host", host);
        if (!addr.empty()) append_option(info, "hostaddr", addr);
        if (!port.empty()) append_option(info, "port", port);
        std::string where = !host.empty() ? host : !addr.empty() ? addr : std::string("localhost");
        out.push_back({where + ":" + (port.empty() ? std::string("5432") : port), std::move(info)});
    }
    return out;
}

}  // namespace respool::pg::detail
