#include "protocol/core/base64.h"

#include <array>
#include <cstdint>

namespace sluice::protocol {
namespace {

constexpr char standard_digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char url_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// 0-63 for a digit of the alphabet, -1 otherwise.
int digit_value(char c, base64_alphabet alphabet) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (alphabet == base64_alphabet::standard) {
        if (c == '+') return 62;
        if (c == '/') return 63;
    } else {
        if (c == '-') return 62;
        if (c == '_') return 63;
    }
    return -1;
}

}  // namespace

std::string base64_encode(std::string_view bytes, base64_alphabet alphabet) {
    const char* digits = alphabet == base64_alphabet::standard ? standard_digits : url_digits;
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t v = static_cast<std::uint8_t>(bytes[i]) << 16 |
                                static_cast<std::uint8_t>(bytes[i + 1]) << 8 |
                                static_cast<std::uint8_t>(bytes[i + 2]);
        out.push_back(digits[v >> 18]);
        out.push_back(digits[(v >> 12) & 0x3f]);
        out.push_back(digits[(v >> 6) & 0x3f]);
        out.push_back(digits[v & 0x3f]);
    }
    const std::size_t left = bytes.size() - i;
    if (left > 0) {
        std::uint32_t v = static_cast<std::uint8_t>(bytes[i]) << 16;
        if (left == 2) {
            v |= static_cast<std::uint8_t>(bytes[i + 1]) << 8;
        }
        out.push_back(digits[v >> 18]);
        out.push_back(digits[(v >> 12) & 0x3f]);
        if (left == 2) {
            out.push_back(digits[(v >> 6) & 0x3f]);
        }
        if (alphabet == base64_alphabet::standard) {
            out.append(left == 1 ? "==" : "=");
        }
    }
    return out;
}

std::optional<std::string> base64_decode(std::string_view text, base64_alphabet alphabet) {
    std::size_t end = text.size();
    if (alphabet == base64_alphabet::standard && end % 4 != 0) {
        return std::nullopt;
    }
    // Up to two '=' at the very end, in either alphabet.
    std::size_t pad = 0;
    while (end > 0 && text[end - 1] == '=' && pad < 2) {
        --end;
        ++pad;
    }
    if (pad > 0 && text.size() % 4 != 0) {
        return std::nullopt;
    }
    if (end % 4 == 1) {
        return std::nullopt;
    }
    std::string out;
    out.reserve(end / 4 * 3 + 2);
    std::uint32_t acc = 0;
    int bits = 0;
    for (std::size_t i = 0; i < end; ++i) {
        const int v = digit_value(text[i], alphabet);
        if (v < 0) {
            return std::nullopt;
        }
        acc = (acc << 6) | static_cast<std::uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>((acc >> bits) & 0xff));
        }
    }
    // The bits left over after the last byte must be zero (a canonical encoding).
    if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) {
        return std::nullopt;
    }
    return out;
}

}  // namespace sluice::protocol
