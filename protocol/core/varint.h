// Variable-length integers as Kafka encodes them: unsigned LEB128 varints, and zigzag for
// signed ones (record fields, compact lengths, tagged fields).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::protocol {

constexpr std::uint32_t zigzag32(std::int32_t v) {
    return (static_cast<std::uint32_t>(v) << 1) ^ static_cast<std::uint32_t>(v >> 31);
}
constexpr std::uint64_t zigzag64(std::int64_t v) {
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
constexpr std::int32_t unzigzag32(std::uint32_t v) {
    return static_cast<std::int32_t>(v >> 1) ^ -static_cast<std::int32_t>(v & 1);
}
constexpr std::int64_t unzigzag64(std::uint64_t v) {
    return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}

/// Bytes an unsigned varint of this value takes (1..10).
constexpr std::size_t uvarint_size(std::uint64_t v) {
    std::size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        ++n;
    }
    return n;
}
constexpr std::size_t varint_size(std::int32_t v) { return uvarint_size(zigzag32(v)); }
constexpr std::size_t varlong_size(std::int64_t v) { return uvarint_size(zigzag64(v)); }

/// Writes an unsigned varint at `out` (room for 10 bytes needed); returns bytes written.
inline std::size_t put_uvarint(std::byte* out, std::uint64_t v) {
    std::size_t n = 0;
    while (v >= 0x80) {
        out[n++] = static_cast<std::byte>((v & 0x7f) | 0x80);
        v >>= 7;
    }
    out[n++] = static_cast<std::byte>(v);
    return n;
}

/// Reads an unsigned varint of at most `max_bytes` from [p, end). Returns bytes consumed,
/// or 0 when the input is truncated or the varint is longer than allowed.
inline std::size_t get_uvarint(const std::byte* p, const std::byte* end, std::uint64_t& out,
                               std::size_t max_bytes) {
    std::uint64_t v = 0;
    unsigned shift = 0;
    for (std::size_t i = 0; i < max_bytes; ++i) {
        if (p + i >= end) {
            return 0;
        }
        auto b = static_cast<std::uint8_t>(p[i]);
        v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            out = v;
            return i + 1;
        }
        shift += 7;
    }
    return 0;
}

}  // namespace sluice::protocol
