#include "gateway/http/base64.h"

#include <array>
#include <cstdint>

namespace sluice::gateway {
namespace {

constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<std::int8_t, 256> make_table() {
    std::array<std::int8_t, 256> t{};
    for (auto& v : t) {
        v = -1;
    }
    for (int i = 0; i < 64; ++i) {
        t[static_cast<unsigned char>(alphabet[i])] = static_cast<std::int8_t>(i);
    }
    return t;
}

constexpr auto table = make_table();

}  // namespace

void base64_encode(std::string_view bytes, std::string& out) {
    const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
    const std::size_t n = bytes.size();
    const std::size_t start = out.size();
    out.resize(start + (n + 2) / 3 * 4);
    char* o = out.data() + start;
    std::size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        const std::uint32_t v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
        *o++ = alphabet[(v >> 18) & 63];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = alphabet[(v >> 6) & 63];
        *o++ = alphabet[v & 63];
    }
    if (i < n) {
        std::uint32_t v = p[i] << 16;
        if (i + 1 < n) {
            v |= p[i + 1] << 8;
        }
        *o++ = alphabet[(v >> 18) & 63];
        *o++ = alphabet[(v >> 12) & 63];
        *o++ = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
        *o++ = '=';
    }
}

std::optional<std::string> base64_decode(std::string_view text) {
    std::size_t len = text.size();
    std::size_t pad = 0;
    while (pad < 2 && len > 0 && text[len - 1] == '=') {
        --len;
        ++pad;
    }
    if (pad > 0 && text.size() % 4 != 0) {
        return std::nullopt;  // padding only ends a complete group
    }
    if (len % 4 == 1) {
        return std::nullopt;
    }
    std::string out;
    out.reserve(len / 4 * 3 + 2);
    std::uint32_t acc = 0;
    int bits = 0;
    for (std::size_t i = 0; i < len; ++i) {
        const std::int8_t v = table[static_cast<unsigned char>(text[i])];
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
    // Leftover bits must be zero (a canonical encoding).
    if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) {
        return std::nullopt;
    }
    return out;
}

}  // namespace sluice::gateway
