// Small helpers shared by the record batch, compression and legacy message tests.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/core/bytes.h"

namespace sluice::protocol::kafka::testing {

inline constexpr std::size_t mib = std::size_t{1} << 20;

/// A byte string with its own storage, built from text.
inline std::vector<std::byte> bytes_of(std::string_view s) {
    auto v = as_bytes(s);
    return {v.begin(), v.end()};
}

inline std::string text(bytes_view b) { return std::string(as_chars(b)); }

/// "<null>" for a null field, else the bytes as text.
inline std::string text(const std::optional<bytes_view>& b) {
    return b ? text(*b) : std::string("<null>");
}

inline std::vector<std::byte> copy_of(bytes_view b) { return {b.begin(), b.end()}; }

/// Reads tests/fixtures/<relative>; fails the test when the file is missing.
inline std::vector<std::byte> read_fixture(const std::string& relative) {
    std::ifstream in(std::string(SLUICE_FIXTURE_DIR) + "/" + relative, std::ios::binary);
    EXPECT_TRUE(in.good()) << "missing fixture " << relative;
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> out(chars.size());
    for (std::size_t i = 0; i < chars.size(); ++i) {
        out[i] = static_cast<std::byte>(chars[i]);
    }
    return out;
}

/// Text of `n` bytes that compresses well (repeated phrases with a counter).
inline std::string compressible_text(std::size_t n) {
    std::string s;
    s.reserve(n + 64);
    for (int i = 0; s.size() < n; ++i) {
        s += "the quick brown fox jumps over the lazy dog ";
        s += std::to_string(i % 97);
        s += '\n';
    }
    s.resize(n);
    return s;
}

/// Bytes that do not compress (a fixed pseudo-random sequence).
inline std::vector<std::byte> noise(std::size_t n, std::uint32_t seed = 12345) {
    std::vector<std::byte> out(n);
    std::uint32_t x = seed;
    for (auto& b : out) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b = static_cast<std::byte>(x & 0xff);
    }
    return out;
}

}  // namespace sluice::protocol::kafka::testing
