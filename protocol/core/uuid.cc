#include "protocol/core/uuid.h"

#include <random>
#include <string_view>

#include "protocol/core/hex.h"

namespace sluice {
namespace {

constexpr char hex_digits[] = "0123456789abcdef";
constexpr char b64_digits[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int b64_value(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-' || c == '+') return 62;
    if (c == '_' || c == '/') return 63;
    return -1;
}

}  // namespace

std::string uuid::to_string() const {
    std::string out;
    out.reserve(36);
    for (std::size_t i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) {
            out.push_back('-');
        }
        out.push_back(hex_digits[bytes[i] >> 4]);
        out.push_back(hex_digits[bytes[i] & 0xf]);
    }
    return out;
}

std::string uuid::to_base64() const {
    std::string out;
    out.reserve(22);
    std::uint32_t acc = 0;
    int bits = 0;
    for (auto b : bytes) {
        acc = (acc << 8) | b;
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out.push_back(b64_digits[(acc >> bits) & 0x3f]);
        }
    }
    if (bits > 0) {
        out.push_back(b64_digits[(acc << (6 - bits)) & 0x3f]);
    }
    return out;
}

uuid uuid::parse(std::string_view text) {
    uuid u;
    if (text.size() == 36) {
        std::size_t j = 0;
        for (std::size_t i = 0; i < 36; ++i) {
            if (i == 8 || i == 13 || i == 18 || i == 23) {
                if (text[i] != '-') return {};
                continue;
            }
            int hi = hex_digit_value(text[i]);
            int lo = i + 1 < 36 ? hex_digit_value(text[i + 1]) : -1;
            if (hi < 0 || lo < 0) return {};
            u.bytes[j++] = static_cast<std::uint8_t>(hi << 4 | lo);
            ++i;
        }
        return u;
    }
    if (text.size() == 22) {
        std::uint32_t acc = 0;
        int bits = 0;
        std::size_t j = 0;
        for (char c : text) {
            int v = b64_value(c);
            if (v < 0) return {};
            acc = (acc << 6) | static_cast<std::uint32_t>(v);
            bits += 6;
            if (bits >= 8 && j < 16) {
                bits -= 8;
                u.bytes[j++] = static_cast<std::uint8_t>((acc >> bits) & 0xff);
            }
        }
        return j == 16 ? u : uuid{};
    }
    return {};
}

uuid uuid::random() {
    thread_local std::mt19937_64 gen{std::random_device{}()};
    uuid u;
    do {
        for (std::size_t i = 0; i < 16; i += 8) {
            std::uint64_t r = gen();
            for (std::size_t k = 0; k < 8; ++k) {
                u.bytes[i + k] = static_cast<std::uint8_t>(r >> (8 * k));
            }
        }
        u.bytes[6] = static_cast<std::uint8_t>((u.bytes[6] & 0x0f) | 0x40);
        u.bytes[8] = static_cast<std::uint8_t>((u.bytes[8] & 0x3f) | 0x80);
    } while (u.is_zero());
    return u;
}

}  // namespace sluice
