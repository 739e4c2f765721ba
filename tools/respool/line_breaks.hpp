// HTTP/1.1 line endings are CRLF (RFC 9112 §2.2). The session refuses a header with any other line
// break; the HTTP fuzzer's model of the session applies the same rule.
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

}  // namespace respool_cli
