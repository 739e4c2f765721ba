// pg::masked: a text without any password, for every text respool produces from a connection string:
// the string itself, libpq's messages about it, a command line's error. It reads a connection string as
// libpq does (fe-connect.c's conninfo and URI parsers; tests/fuzz/fuzz_conninfo_masking holds it against
// libpq's own reading): whitespace is any isspace, values may be quoted or carry backslash escapes, URI
// query keys may be percent-encoded, an IPv6 host sits in brackets. Text libpq would refuse as a
// connection string (an error message, say) has every "password = value" in it masked where it stands,
// every URI in it masked from its scheme on, and the token libpq quotes in its parse errors masked.
// Each reading finds the spans to hide in the original text; they are replaced together at the end, so
// that no reading is misled by what another one hid.
#include <respool/pg/errors.hpp>

#include "../common/hex_digit.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

namespace respool::pg {

namespace {

struct span {
    std::size_t begin, end;  // [begin, end) of the text to hide
};
using spans = std::vector<span>;

using respool::detail::hex_digit;

constexpr std::string_view schemes[] = {"postgresql://", "postgres://"};

bool blank(char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;
}

bool one_of(char c, std::string_view set) {
    return set.find(c) != std::string_view::npos;
}

std::string percent_decoded(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
            out.push_back(static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2])));
            i += 2;
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

// The value of every password=value in the URI query that starts at `p` (keys percent-decoded, as
// libpq reads them; a value ends at the next '&').
void query_passwords(std::string_view s, std::size_t p, spans& out) {
    while (p < s.size()) {
        const auto amp = s.find('&', p);
        const std::size_t end = amp == std::string_view::npos ? s.size() : amp;
        const auto eq = s.find('=', p);
        if (eq < end && percent_decoded(s.substr(p, eq - p)) == "password") out.push_back({eq + 1, end});
        p = end + 1;
    }
}

// Where the query of the URI whose host list starts at `p` begins (past its '?'), read as libpq's
// conninfo_uri_parse_options reads it: hosts separated by ',', each a name or an [IPv6 address] with
// an optional :port, then an optional /dbname. npos: there is no query. nullopt: libpq refuses the URI.
std::optional<std::size_t> query_start(std::string_view s, std::size_t p) {
    for (;;) {
        if (p < s.size() && s[p] == '[') {
            p = s.find(']', p + 1);
            if (p == std::string_view::npos) return std::nullopt;
            ++p;
            if (p < s.size() && !one_of(s[p], ":/?,")) return std::nullopt;
        } else {
            while (p < s.size() && !one_of(s[p], ":/?,")) ++p;
        }
        if (p < s.size() && s[p] == ':')
            while (++p < s.size() && !one_of(s[p], "/?,")) {
            }
        if (p >= s.size()) return std::string_view::npos;
        if (s[p] != ',') break;
        ++p;
    }
    if (s[p] == '/') p = s.find('?', p);
    return p == std::string_view::npos ? p : p + 1;
}

// The URI whose scheme ends at `scheme_end`, to the end of `s`.
void uri_passwords(std::string_view s, std::size_t scheme_end, spans& out) {
    // user:password@ : libpq looks for '@' before the first '/', the user ends at the first ':'.
    std::size_t at = scheme_end;
    while (at < s.size() && s[at] != '@' && s[at] != '/') ++at;
    std::size_t hosts = scheme_end;  // where the host list starts: after the credentials, if any
    if (at < s.size() && s[at] == '@') {
        const auto colon = s.find(':', scheme_end);
        if (colon < at) out.push_back({colon + 1, at});
        hosts = at + 1;
    }
    // A URI libpq refuses (quoted by its own error message, say): everything from the first '?' on
    // may be the query.
    const auto query = query_start(s, hosts);
    if (!query) {
        const auto q = s.find('?', hosts);
        if (q != std::string_view::npos) query_passwords(s, q + 1, out);
    } else if (*query != std::string_view::npos) {
        query_passwords(s, *query, out);
    }
}

// Every URI inside `s` from `from` on, each from its scheme to the end of the text (libpq's messages
// quote a URI last; what follows it is masked as its query would be, at worst).
void embedded_uri_passwords(std::string_view s, std::size_t from, spans& out) {
    for (std::string_view scheme : schemes)
        for (auto p = s.find(scheme, from); p != std::string_view::npos; p = s.find(scheme, p + 1))
            uri_passwords(s, p + scheme.size(), out);
}

std::size_t skip_blanks(std::string_view s, std::size_t p) {
    while (p < s.size() && blank(s[p])) ++p;
    return p;
}

// Where the value starting at `p` ends, as libpq reads it: quoted ('...') to past the closing quote,
// bare to the next blank; a backslash escapes the next character in both. npos: the quote is never
// closed.
std::size_t value_end(std::string_view s, std::size_t p) {
    const bool quoted = p < s.size() && s[p] == '\'';
    for (p += quoted ? 1 : 0; p < s.size(); ++p) {
        if (s[p] == '\\') {
            if (p + 1 < s.size()) ++p;
        } else if (quoted ? s[p] == '\'' : blank(s[p])) {
            return quoted ? p + 1 : p;
        }
    }
    return quoted ? std::string_view::npos : p;
}

// Whether `name` can be a libpq keyword (every one is lowercase letters and underscores).
bool keyword_like(std::string_view name) {
    return !name.empty() &&
           std::all_of(name.begin(), name.end(), [](char c) { return (c >= 'a' && c <= 'z') || c == '_'; });
}

// Whether a "keyword =" starts at `p` (the next option of a connection string).
bool option_at(std::string_view s, std::size_t p) {
    std::size_t e = p;
    while (e < s.size() && s[e] != '=' && !blank(s[e])) ++e;
    if (!keyword_like(s.substr(p, e - p))) return false;
    e = skip_blanks(s, e);
    return e < s.size() && s[e] == '=';
}

// Free text: every "password", blanks, '=', blanks, then a value bare or quoted, wherever it stands
// (an unterminated quote: to the end). A bare value goes on over blanks to the next "keyword =" or
// the next quote (the end of a connection string quoted in a message): in a string libpq refused,
// "password=my secret" meant a password with a blank in it. A value already masked stays as it is.
void text_passwords(std::string_view s, spans& out) {
    constexpr std::string_view quotes = "'\"";
    for (std::size_t p = s.find("password"); p != std::string_view::npos; p = s.find("password", p + 1)) {
        std::size_t q = skip_blanks(s, p + 8);
        if (q >= s.size() || s[q] != '=') continue;
        q = skip_blanks(s, q + 1);
        std::size_t end = std::min(value_end(s, q), s.size());
        if (s.substr(q, 3) == "***" && (end == q + 3 || quotes.find(s[q + 3]) != std::string_view::npos))
            continue;  // masked already (a message quoting a masked string masked once more)
        const bool bare = q < s.size() && s[q] != '\'';
        if (bare && s.substr(q, end - q).find_first_of(quotes) == std::string_view::npos)
            for (std::size_t next = skip_blanks(s, end); next < s.size() && !option_at(s, next);
                 next = skip_blanks(s, end)) {
                const std::size_t word_end = std::min(value_end(s, next), s.size());
                const auto quote = s.substr(next, word_end - next).find_first_of(quotes);
                if (quote != std::string_view::npos) {
                    end = next + quote;
                    break;
                }
                end = word_end;
            }
        out.push_back({q, end});
    }
}

// libpq's parse errors that quote a piece of the string which may be (part of) the password: the
// token whose percent-encoding failed (a password is percent-decoded), the word after which '=' was
// missing (the rest of a password with a blank in it). The piece is masked to its closing quote (the
// text's last '"': the piece may hold quotes and line breaks), whatever it is.
void quoted_pieces(std::string_view s, spans& out) {
    constexpr std::string_view missing = "missing \"=\" after \"";
    constexpr std::string_view leads[] = {"percent-encoded token: \"", "percent-encoded value: \"", missing};
    for (std::string_view lead : leads)
        for (auto p = s.find(lead); p != std::string_view::npos; p = s.find(lead, p + 1)) {
            const std::size_t from = p + lead.size();
            auto close = lead == missing ? s.rfind("\" in connection info string") : s.rfind('"');
            if (close == std::string_view::npos || close < from) close = s.size();
            out.push_back({from, close});
        }
}

// keyword = value pairs, read as libpq's conninfo_parse reads them (see value_end). False when libpq
// would refuse the string (a word without '=', an unterminated quote, a name no keyword can have: then
// it is text, "password=..." inside a message, say).
bool pair_passwords(std::string_view s, spans& out) {
    spans found;
    for (std::size_t p = skip_blanks(s, 0); p < s.size(); p = skip_blanks(s, p)) {
        const std::size_t name = p;
        while (p < s.size() && s[p] != '=' && !blank(s[p])) ++p;
        const std::string_view key = s.substr(name, p - name);
        if (!keyword_like(key)) return false;
        p = skip_blanks(s, p);
        if (p >= s.size() || s[p] != '=') return false;
        const std::size_t value = skip_blanks(s, p + 1);
        p = value_end(s, value);
        if (p == std::string_view::npos) return false;
        if (key == "password") found.push_back({value, p});
    }
    out.insert(out.end(), found.begin(), found.end());
    return true;
}

// `s` with every span replaced by "***" (overlapping and touching spans as one).
std::string hidden(std::string_view s, spans found) {
    std::sort(found.begin(), found.end(), [](span a, span b) { return a.begin < b.begin; });
    std::string out;
    std::size_t at = 0;
    for (std::size_t i = 0; i < found.size();) {
        span merged = found[i];
        while (++i < found.size() && found[i].begin <= merged.end)
            merged.end = std::max(merged.end, found[i].end);
        out.append(s.substr(at, merged.begin - at));
        out.append("***");
        at = merged.end;
    }
    out.append(s.substr(at));
    return out;
}

}  // namespace

std::string masked(std::string_view text) {
    spans found;
    bool uri = false;
    for (std::string_view scheme : schemes)
        if (text.substr(0, scheme.size()) == scheme) {
            uri_passwords(text, scheme.size(), found);
            embedded_uri_passwords(text, 1, found);
            uri = true;
        }
    if (!uri) {
        if (!pair_passwords(text, found)) {
            text_passwords(text, found);
            quoted_pieces(text, found);
        }
        embedded_uri_passwords(text, 0, found);
    }
    return hidden(text, std::move(found));
}

}  // namespace respool::pg
