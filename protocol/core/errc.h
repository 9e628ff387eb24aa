// Errors of the protocol module: why bytes could not be decoded, or a value not encoded.
#pragma once

#include <system_error>

namespace sluice::protocol {

enum class errc {
    truncated = 1,            // the input ended before the field it was reading
    invalid_length,           // a length or count is negative where null is not allowed, or too big
    invalid_varint,           // a varint ran longer than its type allows
    unsupported_version,      // the API version is outside what the codec implements
    unknown_api,              // the API key is not one the codec knows
    invalid_value,            // a field holds a value the format forbids (bad magic, bad flag)
    crc_mismatch,             // a record batch's CRC-32C does not match its bytes
    unsupported_compression,  // a compression codec id the codec does not know
    compression_error,        // compressed data failed to decompress (or to compress)
    too_large,                // a decompressed or encoded size exceeds the configured limit
    trailing_bytes,           // bytes were left over after the last field
};

const std::error_category& protocol_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
    return {static_cast<int>(e), protocol_category()};
}

}  // namespace sluice::protocol

template <>
struct std::is_error_code_enum<sluice::protocol::errc> : std::true_type {};
