// pg::masked: a connection string without its password, for every text respool produces.
#include <respool/pg/connection.hpp>

#include <string>

namespace respool::pg {

std::string masked(std::string_view info) {
    std::string s(info);
    if (s.rfind("postgresql://", 0) == 0 || s.rfind("postgres://", 0) == 0) {  // user:password@host
        const auto scheme = s.find("://") + 3;
        const auto at = s.find('@', scheme);
        const auto colon = s.find(':', scheme);
        if (at != std::string::npos && colon != std::string::npos && colon < at)
            s.replace(colon + 1, at - colon - 1, "***");
        for (std::size_t p = s.find("password=", scheme); p != std::string::npos;
             p = s.find("password=", p)) {
            p += 9;
            const auto end = s.find('&', p);
            s.replace(p, (end == std::string::npos ? s.size() : end) - p, "***");
        }
        return s;
    }
    // keyword = value, value perhaps quoted with backslash escapes
    for (std::size_t p = s.find("password"); p != std::string::npos; p = s.find("password", p + 1)) {
        std::size_t q = p + 8;
        while (q < s.size() && s[q] == ' ') ++q;
        if (q >= s.size() || s[q] != '=') continue;
        ++q;
        while (q < s.size() && s[q] == ' ') ++q;
        std::size_t end = q;
        if (end < s.size() && s[end] == '\'') {
            for (++end; end < s.size() && s[end] != '\''; ++end)
                if (s[end] == '\\') ++end;
            if (end < s.size()) ++end;
        } else {
            while (end < s.size() && s[end] != ' ') ++end;
        }
        s.replace(q, end - q, "***");
    }
    return s;
}

}  // namespace respool::pg
