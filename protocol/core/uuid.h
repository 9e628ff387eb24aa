// A 128-bit UUID as Kafka sends it (16 raw bytes, big-endian), e.g. topic ids.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <compare>

namespace sluice {

struct uuid {
    std::array<std::uint8_t, 16> bytes{};

    constexpr bool is_zero() const {
        for (auto b : bytes) {
            if (b != 0) {
                return false;
            }
        }
        return true;
    }
    constexpr auto operator<=>(const uuid&) const = default;
    constexpr bool operator==(const uuid&) const = default;

    /// 8-4-4-4-12 lowercase hex, as Java's UUID.toString().
    std::string to_string() const;
    /// Kafka's printed form of a topic id: URL-safe base64 without padding (22 characters).
    std::string to_base64() const;
    /// Parses either printed form; returns the zero uuid on bad input.
    static uuid parse(std::string_view text);
    /// A random (version 4) uuid from a cryptographically seeded generator; never zero.
    static uuid random();
};

}  // namespace sluice
