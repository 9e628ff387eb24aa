#include "protocol/core/base64.h"

#include <array>
#include <cstdint>

namespace sluice::protocol {
namespace {

constexpr char standard_digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char url_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Each byte's digit value in one alphabet: 0-63, or -1 for a byte outside it.
constexpr std::array<std::int8_t, 256> digit_table(const char* digits) {
    std::array<std::int8_t, 256> t{};
    for (auto& v : t) {
        v = -1;
    }
    for (int i = 0; i < 64; ++i) {
        t[static_cast<unsigned char>(digits[i])] = static_cast<std::int8_t>(i);
    }
    return t;
}

constexpr auto standard_values = digit_table(standard_digits);
constexpr auto url_values = digit_table(url_digits);

}  // namespace

void base64_encode(std::string_view bytes, std::string& out, base64_alphabet alphabet) {
    const bool standard = alphabet == base64_alphabet::standard;
    const char* digits = standard ? standard_digits : url_digits;
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    const std::size_t n = bytes.size();
    const std::size_t left = n % 3;
    const std::size_t size = n / 3 * 4 + (left == 0 ? 0 : standard ? 4 : left + 1);
    const std::size_t start = out.size();
    out.resize(start + size);
    char* o = out.data() + start;
    std::size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        const std::uint32_t v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
        *o++ = digits[v >> 18];
        *o++ = digits[(v >> 12) & 0x3f];
        *o++ = digits[(v >> 6) & 0x3f];
        *o++ = digits[v & 0x3f];
    }
    if (left > 0) {
        std::uint32_t v = p[i] << 16;
        if (left == 2) {
            v |= p[i + 1] << 8;
        }
        *o++ = digits[v >> 18];
        *o++ = digits[(v >> 12) & 0x3f];
        if (left == 2) {
            *o++ = digits[(v >> 6) & 0x3f];
        }
        if (standard) {
            *o++ = '=';
            if (left == 1) {
                *o++ = '=';
            }
        }
    }
}

std::string base64_encode(std::string_view bytes, base64_alphabet alphabet) {
    std::string out;
    base64_encode(bytes, out, alphabet);
    return out;
}

std::optional<std::string> base64_decode(std::string_view text, base64_alphabet alphabet,
                                         base64_padding padding) {
    const bool standard = alphabet == base64_alphabet::standard;
    if (standard && padding == base64_padding::required && text.size() % 4 != 0) {
        return std::nullopt;
    }
    // Up to two '=' at the very end, and only to complete a group of four.
    std::size_t end = text.size();
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
    const auto& values = standard ? standard_values : url_values;
    // Whole groups of four digits make three bytes; a last group of two or three digits makes
    // one or two (a group of one was refused above).
    const std::size_t whole = end / 4 * 4;
    std::string out(whole / 4 * 3 + (end - whole) * 3 / 4, '\0');
    char* o = out.data();
    const auto* in = reinterpret_cast<const unsigned char*>(text.data());
    std::size_t i = 0;
    for (; i < whole; i += 4) {
        const int a = values[in[i]];
        const int b = values[in[i + 1]];
        const int c = values[in[i + 2]];
        const int d = values[in[i + 3]];
        if ((a | b | c | d) < 0) {
            return std::nullopt;
        }
        const auto v = static_cast<std::uint32_t>((a << 18) | (b << 12) | (c << 6) | d);
        *o++ = static_cast<char>(v >> 16);
        *o++ = static_cast<char>((v >> 8) & 0xff);
        *o++ = static_cast<char>(v & 0xff);
    }
    std::uint32_t acc = 0;
    int bits = 0;
    for (; i < end; ++i) {
        const std::int8_t v = values[in[i]];
        if (v < 0) {
            return std::nullopt;
        }
        acc = (acc << 6) | static_cast<std::uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            *o++ = static_cast<char>((acc >> bits) & 0xff);
        }
    }
    // The bits left over after the last byte must be zero (a canonical encoding).
    if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) {
        return std::nullopt;
    }
    return out;
}

}  // namespace sluice::protocol
