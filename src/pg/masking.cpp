// pg::masked: a connection string without its password, for every text respool produces. It reads the
// string as libpq does (fe-connect.c's conninfo and URI parsers; tests/fuzz/fuzz_conninfo_masking
// holds it against libpq's own reading): whitespace is any isspace, values may be quoted or carry
// backslash escapes, URI query keys may be percent-encoded. Text libpq would refuse as a connection
// string (an error message, say) has every "password = value" in it masked where it stands.
#include <respool/pg/errors.hpp>

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>

namespace respool::pg {

namespace {

bool blank(char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;
}

int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

std::string percent_decoded(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
            out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
            i += 2;
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

std::string masked_uri(std::string s, std::size_t scheme_end) {
    // user:password@ : libpq looks for '@' before the first '/', the user ends at the first ':'.
    std::size_t at = scheme_end;
    while (at < s.size() && s[at] != '@' && s[at] != '/') ++at;
    std::size_t hosts = scheme_end;  // where the host list starts: after the credentials, if any
    if (at < s.size() && s[at] == '@') {
        const auto colon = s.find(':', scheme_end);
        if (colon < at) {
            s.replace(colon + 1, at - colon - 1, "***");
            at = colon + 1 + 3;
        }
        hosts = at + 1;
    }
    // ?key=value&... after the hosts and the database name: keys percent-decoded; a password's value
    // masked (to the next '&').
    const auto query = s.find('?', hosts);
    if (query == std::string::npos) return s;
    for (std::size_t p = query + 1; p < s.size();) {
        const auto amp = s.find('&', p);
        const std::size_t end = amp == std::string::npos ? s.size() : amp;
        const auto eq = s.find('=', p);
        if (eq < end && percent_decoded(std::string_view(s).substr(p, eq - p)) == "password") {
            s.replace(eq + 1, end - eq - 1, "***");
            p = eq + 1 + 3 + 1;
        } else {
            p = end + 1;
        }
    }
    return s;
}

std::size_t skip_blanks(const std::string& s, std::size_t p) {
    while (p < s.size() && blank(s[p])) ++p;
    return p;
}

// Where the value starting at `p` ends, as libpq reads it: quoted ('...') to past the closing quote,
// bare to the next blank; a backslash escapes the next character in both. npos: the quote is never
// closed.
std::size_t value_end(const std::string& s, std::size_t p) {
    const bool quoted = p < s.size() && s[p] == '\'';
    for (p += quoted ? 1 : 0; p < s.size(); ++p) {
        if (s[p] == '\\') {
            if (p + 1 < s.size()) ++p;
        } else if (quoted ? s[p] == '\'' : blank(s[p])) {
            return quoted ? p + 1 : p;
        }
    }
    return quoted ? std::string::npos : p;
}

// Free text (an error message, a string libpq would refuse): every "password", blanks, '=', blanks,
// then a value bare or quoted is masked wherever it stands.
std::string masked_text(std::string s) {
    for (std::size_t p = s.find("password"); p != std::string::npos; p = s.find("password", p + 1)) {
        std::size_t q = skip_blanks(s, p + 8);
        if (q >= s.size() || s[q] != '=') continue;
        q = skip_blanks(s, q + 1);
        s.replace(q, std::min(value_end(s, q), s.size()) - q, "***");
    }
    return s;
}

// keyword = value pairs, read as libpq's conninfo_parse reads them (see value_end). nullopt when libpq
// would refuse the string (a word without '=', an unterminated quote).
std::optional<std::string> masked_pairs(std::string s) {
    for (std::size_t p = skip_blanks(s, 0); p < s.size(); p = skip_blanks(s, p)) {
        const std::size_t name = p;
        while (p < s.size() && s[p] != '=' && !blank(s[p])) ++p;
        const std::size_t name_end = p;
        p = skip_blanks(s, p);
        if (p >= s.size() || s[p] != '=') return std::nullopt;
        const std::size_t value = skip_blanks(s, p + 1);
        p = value_end(s, value);
        if (p == std::string::npos) return std::nullopt;
        if (std::string_view(s).substr(name, name_end - name) == "password") {
            s.replace(value, p - value, "***");
            p = value + 3;
        }
    }
    return s;
}

}  // namespace

std::string masked(std::string_view info) {
    std::string s(info);
    for (std::string_view scheme : {"postgresql://", "postgres://"})
        if (s.rfind(scheme, 0) == 0) return masked_uri(std::move(s), scheme.size());
    if (auto pairs = masked_pairs(s)) return std::move(*pairs);
    return masked_text(std::move(s));
}

}  // namespace respool::pg
