// HTTP/1.1 line endings are CRLF (RFC 9112 §2.2), and a header field is one line: the session refuses a
// header with any other line break, or with a field continued on the next line (obs-fold, RFC 9112
// §5.2); the HTTP fuzzer's model of the session applies the same rules.
#pragma once

#include <cstddef>
#include <string_view>

namespace respool_cli {

// A line break that is not CRLF in bytes the parser has not taken (the start of a header, or what
// follows a line it has taken, CRLF included): a '\n' not after a '\r', or a '\r' before anything but
// '\n' (a '\r' last may be the start of a CRLF whose '\n' is still on its way).
inline bool has_bare_line_break(std::string_view unparsed) noexcept {
    for (std::size_t i = 0; i < unparsed.size(); ++i) {
        if (unparsed[i] == '\n' && (i == 0 || unparsed[i - 1] != '\r')) return true;
        if (unparsed[i] == '\r' && i + 1 < unparsed.size() && unparsed[i + 1] != '\n') return true;
    }
    return false;
}

// A folded field line (obs-fold: a CRLF followed by a space or a tab) in the header at the start of
// `unparsed`, which begins at a line of it (the request line, or a field line after the parser took
// the lines before). Beast's parser unfolds such a line into one value, where a proxy that does not
// unfold it sees another (a "Transfer-Encoding:" line continued by " chunked" is an empty
// Transfer-Encoding to it): the line is refused instead. The scan stops at the header's blank line,
// before any byte of the body. A line break last in `unparsed` may be a fold whose space is on its way:
// the next look, with more bytes, sees it (Beast never takes a field line before the byte after it).
inline bool has_obs_fold(std::string_view unparsed) noexcept {
    std::size_t line = 0;  // where the current line starts
    for (std::size_t i = 0; i + 1 < unparsed.size(); ++i) {
        if (unparsed[i] != '\r' || unparsed[i + 1] != '\n') continue;
        if (i == line) return false;  // a blank line: the header ends
        if (i + 2 < unparsed.size() && (unparsed[i + 2] == ' ' || unparsed[i + 2] == '\t')) return true;
        line = i + 2;
        ++i;
    }
    return false;
}

}  // namespace respool_cli
