// One hexadecimal digit's value, for the decoders of the database layers (bytea's "\x..." text, the
// percent-encoding of connection URIs).
#pragma once

namespace respool::detail {

// 0-15 for 0-9, a-f, A-F; -1 for any other character.
constexpr int hex_digit(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

}  // namespace respool::detail
