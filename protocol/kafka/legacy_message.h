// Legacy message sets (message format v0 and v1, "magic 0/1"), which Produce v0-2 carry and
// Fetch v0-3 return: decoding, writing single messages, and conversion both ways between a
// legacy message set and v2 record batches.
//
// Owned by the protocol module. The Kafka front converts legacy produce payloads to one v2
// batch before the log sees them (the log stores v2 only), and down-converts stored batches
// for old fetch versions (Fetch v0-1: magic 0, v2-3: magic 1; legacy_magic_for_fetch).
//
// Message layout (big-endian):
//   offset        int64
//   message_size  int32   bytes after this field
//   crc           uint32  CRC-32 (IEEE, zlib's crc32) of every byte after this field
//   magic         int8    0 or 1
//   attributes    int8    bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4),
//                         bit 3 timestamp type (magic 1 only; 1 = log append time)
//   timestamp     int64   magic 1 only
//   key           int32 length (-1 = null), bytes
//   value         int32 length (-1 = null), bytes
// A compressed message (a "wrapper") holds in its value a compressed message set of
// uncompressed messages of the same magic. In a magic 0 wrapper the inner offsets are
// absolute; in a magic 1 wrapper they are relative (0 .. n-1) and the wrapper's offset is the
// absolute offset of the last inner message. A magic 1 wrapper with log append time gives its
// timestamp to every inner message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "protocol/core/bytes.h"
#include "protocol/core/result.h"
#include "protocol/kafka/compression.h"
#include "protocol/kafka/record_batch.h"

namespace sluice::protocol::kafka {

/// offset + message_size: the part of a message message_size does not count.
constexpr std::size_t legacy_log_overhead = 12;
/// Smallest message_size for each magic (crc, magic, attributes, [timestamp], two lengths).
constexpr std::size_t legacy_min_message_size_v0 = 14;
constexpr std::size_t legacy_min_message_size_v1 = 22;
constexpr std::int8_t legacy_attr_timestamp_type = 0x08;

/// One message: a view into the input (uncompressed messages) or into the decompressed
/// buffer of its wrapper (owned by the legacy_message_set).
struct legacy_message {
    std::int64_t offset = 0;  // absolute (relative offsets of magic 1 wrappers resolved)
    std::int8_t magic = 0;
    std::int8_t attributes = 0;
    std::int64_t timestamp = -1;  // -1 for magic 0
    std::optional<bytes_view> key;
    std::optional<bytes_view> value;

    compression codec() const { return static_cast<compression>(attributes & 0x07); }
    bool log_append_time() const { return magic >= 1 && (attributes & legacy_attr_timestamp_type); }
};

/// A decoded message set with compressed wrappers expanded into their inner messages.
/// Move-only: the views point into `storage` and into the caller's input.
struct legacy_message_set {
    std::vector<legacy_message> messages;
    /// Codec of the first compressed wrapper; none when no message was compressed.
    compression codec = compression::none;
    /// Highest magic seen (-1 for an empty set). Produce v0-1 must send 0; v2 may send 1.
    std::int8_t max_magic = -1;
    /// The input ended with a partial message that allow_truncated_tail let through.
    bool truncated_tail = false;
    std::vector<byte_buffer> storage;

    legacy_message_set() = default;
    legacy_message_set(legacy_message_set&&) noexcept = default;
    legacy_message_set& operator=(legacy_message_set&&) noexcept = default;
    legacy_message_set(const legacy_message_set&) = delete;
    legacy_message_set& operator=(const legacy_message_set&) = delete;
};

struct legacy_decode_options {
    /// Total bytes all wrappers of the set may decompress to (errc::too_large beyond).
    std::size_t max_decompressed = default_max_decompressed_bytes;
    /// Drop a partial last message (as a Fetch response may end) instead of failing.
    bool allow_truncated_tail = false;
};

/// Decodes a legacy message set, checking each message's CRC, lengths and magic, and
/// expanding compressed wrappers (one level: a wrapper inside a wrapper is invalid_value, as
/// are a wrapper without inner messages and inner messages of another magic). zstd is not
/// allowed below magic 2 (unsupported_compression).
result<legacy_message_set> decode_legacy_messages(bytes_view data,
                                                  const legacy_decode_options& options = {});

/// Appends one message with `m`'s fields (timestamp written only for magic 1), CRC computed.
/// For a wrapper, `m.value` is the already-compressed inner message set.
void append_legacy_message(byte_buffer& out, const legacy_message& m);

/// Bytes append_legacy_message writes for these fields.
std::size_t legacy_message_size(std::int8_t magic, const std::optional<bytes_view>& key,
                                const std::optional<bytes_view>& value);

struct legacy_to_batch_options {
    /// Codec of the batch; unset keeps the codec the producer used for the set.
    std::optional<compression> codec;
    compress_options compression_options;
    std::size_t max_decompressed = default_max_decompressed_bytes;
};

/// Converts a produced legacy message set into one v2 batch: keys, values and timestamps
/// (-1 for magic 0) kept, offset deltas 0 .. n-1 (the log assigns offsets), no producer id,
/// create-time timestamps (the log applies LogAppendTime topics itself). An empty set is
/// invalid_value.
result<byte_buffer> convert_legacy_to_batch(bytes_view message_set,
                                            const legacy_to_batch_options& options = {});

/// The message format a Fetch version can carry: v0-1 -> 0, v2-3 -> 1, v4+ -> 2.
std::int8_t legacy_magic_for_fetch(std::int16_t fetch_version);

/// Down-converts concatenated stored batches (as a fetch reads them from the log) to a magic 0
/// or 1 message set for old Fetch versions:
///   - every record becomes one uncompressed message at its absolute offset; compressed
///     batches are decompressed (at most `max_decompressed` bytes each) and not re-compressed;
///   - headers are dropped; magic 1 keeps timestamps and the log-append-time flag;
///   - control batches (transaction markers) are skipped, as Kafka does;
///   - legacy messages met in the input are re-emitted at the target magic;
///   - records below `first_offset` (the fetch offset, which may fall inside the first
///     batch) are skipped, as Kafka's down-conversion does;
///   - a partial batch at the end of the input is ignored (a fetch may cut one off).
/// The CRC of the input batches is not checked (they were validated on append).
result<byte_buffer> convert_batches_to_legacy(bytes_view batches, std::int8_t magic,
                                              std::size_t max_decompressed,
                                              std::int64_t first_offset = 0);

}  // namespace sluice::protocol::kafka
