#pragma once

#include <cstdint>

namespace sluice::protocol {

/// Two's-complement arithmetic on int64: offsets and timestamps from untrusted batches may
/// overflow, and the result must be defined (and match what Kafka's Java arithmetic gives).
inline std::int64_t wrapping_add(std::int64_t a, std::int64_t b) {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}

inline std::int64_t wrapping_sub(std::int64_t a, std::int64_t b) {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}

}  // namespace sluice::protocol
