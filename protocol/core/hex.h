// Hexadecimal digits and percent-escapes (RFC 3986 section 2.1), for every module that reads
// them: URLs and form bodies (gateway/http), SigV4's canonical requests (auth), sluice's own
// text files (auth), UUIDs.
#pragma once

#include <string_view>

namespace sluice {

/// The value of one hexadecimal digit of either case, or -1.
constexpr int hex_digit_value(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/// The byte a "%XY" escape at the start of `s` stands for, or -1 when `s` does not start with
/// '%' and two hexadecimal digits.
constexpr int percent_escape_value(std::string_view s) {
    if (s.size() < 3 || s[0] != '%') {
        return -1;
    }
    const int hi = hex_digit_value(s[1]);
    const int lo = hex_digit_value(s[2]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

}  // namespace sluice
