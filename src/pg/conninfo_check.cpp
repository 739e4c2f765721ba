// pg::conninfo_error: a connection string checked before anything connects. libpq's parser
// (PQconninfoParse) takes any text as an option's value and finds "port=notaport" or "sslmode=bogus"
// wrong only when a connect starts; a pool would then fail every connect, back off and open its
// circuit, with a message at each borrow instead of one at startup. So the values libpq checks at
// connect time are checked here, by libpq 15's own rules (fe-connect.c): ports, the counts of hosts,
// addresses and ports, the enumerated modes and the integer settings. Messages name the option; a
// password is never quoted (nothing here reads it, and the whole message goes through masked()).
#include <respool/pg/errors.hpp>

#include <libpq-fe.h>

#include <cctype>
#include <charconv>
#include <initializer_list>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace respool::pg {

namespace {

std::string_view trimmed(std::string_view v) {
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    return v;
}

// An integer as libpq's parse_int_param reads it (blanks around it allowed, nothing else); nullopt
// when it is none or does not fit an int.
std::optional<int> integer(std::string_view v) {
    v = trimmed(v);
    if (!v.empty() && v.front() == '+') v.remove_prefix(1);
    int out = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
    if (v.empty() || ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
    return out;
}

std::size_t count_of(const std::string& list) {
    std::size_t n = 1;
    for (char c : list) n += c == ',' ? 1 : 0;
    return n;
}

std::string quoted(const std::string& v) {
    return "\"" + v + "\"";
}

// Why the ports are wrong (empty: they are not): each entry empty (the default) or 1 to 65535, and one
// port for every host or one per host.
std::string port_error(const std::string& ports, std::size_t hosts) {
    std::size_t b = 0;
    for (;;) {
        const auto e = ports.find(',', b);
        const std::string one = ports.substr(b, e == std::string::npos ? std::string::npos : e - b);
        if (!trimmed(one).empty()) {
            const auto n = integer(one);
            if (!n || *n < 1 || *n > 65535)
                return "option port: " + quoted(one) + " is not a port number (1 to 65535)";
        }
        if (e == std::string::npos) break;
        b = e + 1;
    }
    const std::size_t n = count_of(ports);
    if (n > 1 && n != hosts)
        return "option port: " + std::to_string(n) + " ports for " + std::to_string(hosts) +
               " hosts (give one port for every host, or one per host)";
    return {};
}

std::string one_of_error(const std::string& option, const std::string& value,
                         const std::vector<std::string_view>& allowed, bool any_case = false) {
    auto same = [any_case](std::string_view a, std::string_view b) {
        if (a.size() != b.size()) return false;
        for (std::size_t i = 0; i < a.size(); ++i) {
            const auto x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
            if (any_case ? std::tolower(x) != std::tolower(y) : x != y) return false;
        }
        return true;
    };
    std::string names;
    for (std::string_view a : allowed) {
        if (same(value, a)) return {};
        names += (names.empty() ? "" : ", ") + std::string(a);
    }
    return "option " + option + ": " + quoted(value) + " is not one of " + names;
}

std::string values_error(const std::map<std::string, std::string>& given) {
    auto value = [&given](const char* k) -> const std::string* {
        const auto i = given.find(k);
        return i == given.end() ? nullptr : &i->second;
    };
    // Hosts: the host list, else the hostaddr list, else one (the default).
    const std::string* host = value("host");
    const std::string* hostaddr = value("hostaddr");
    if (host && hostaddr && !host->empty() && !hostaddr->empty() && count_of(*host) != count_of(*hostaddr))
        return "option hostaddr: " + std::to_string(count_of(*hostaddr)) + " addresses for " +
               std::to_string(count_of(*host)) + " hosts (give one per host)";
    const std::size_t hosts = host && !host->empty()           ? count_of(*host)
                              : hostaddr && !hostaddr->empty() ? count_of(*hostaddr)
                                                               : 1;
    if (const std::string* port = value("port"); port && !port->empty())
        if (std::string e = port_error(*port, hosts); !e.empty()) return e;

    // (Vectors: an initializer_list inside a pair would not outlive the array's initialization.)
    const std::pair<const char*, std::vector<std::string_view>> modes[] = {
        {"sslmode", {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}},
        {"gssencmode", {"disable", "prefer", "require"}},
        {"channel_binding", {"disable", "prefer", "require"}},
        {"target_session_attrs", {"any", "read-write", "read-only", "primary", "standby", "prefer-standby"}},
    };
    for (const auto& [option, allowed] : modes)
        if (const std::string* v = value(option))
            if (std::string e = one_of_error(option, *v, allowed); !e.empty()) return e;
    for (const char* option : {"ssl_min_protocol_version", "ssl_max_protocol_version"})
        if (const std::string* v = value(option); v && !v->empty())
            if (std::string e = one_of_error(option, *v, {"TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"}, true);
                !e.empty())
                return e;
    // Integer settings (seconds, counts, milliseconds): libpq refuses what is no int; a negative one
    // would mean "none" to some and nonsense to others, so it is refused too.
    for (const char* option : {"connect_timeout", "keepalives", "keepalives_idle", "keepalives_interval",
                               "keepalives_count", "tcp_user_timeout"})
        if (const std::string* v = value(option); v && !trimmed(*v).empty()) {
            const auto n = integer(*v);
            if (!n || *n < 0)
                return "option " + std::string(option) + ": " + quoted(*v) +
                       " is not a whole number from 0 to " + std::to_string(std::numeric_limits<int>::max());
        }
    return {};
}

}  // namespace

std::string conninfo_error(std::string_view conninfo) {
    char* err = nullptr;
    PQconninfoOption* opts = PQconninfoParse(std::string(conninfo).c_str(), &err);
    if (!opts) {
        std::string reason = err ? err : "out of memory";
        if (err) PQfreemem(err);
        while (!reason.empty() && (reason.back() == '\n' || reason.back() == ' ')) reason.pop_back();
        return masked(reason);
    }
    std::map<std::string, std::string> given;
    for (PQconninfoOption* o = opts; o->keyword; ++o)
        if (o->val) given.emplace(o->keyword, o->val);
    PQconninfoFree(opts);
    return masked(values_error(given));
}

}  // namespace respool::pg
