// The four compression codecs of Kafka record batches and legacy messages, both ways:
// gzip (zlib), snappy (raw, or in the xerial framing the Java client writes), lz4 (frame
// format) and zstd. Owned by the protocol module; used by the record iterator, the batch
// builder and the legacy message code.
//
// Decompression is always bounded: the caller passes the most bytes it accepts, and a stream
// that would expand past it (a decompression bomb) fails with errc::too_large before more than
// that limit (plus one byte) is produced. Corrupt or truncated input fails with
// errc::compression_error. Nothing here throws or aborts on bad input.
//
// Both directions append to a byte_buffer the caller owns, so a batch header can be reserved
// in front of the compressed bytes without another copy.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocol/core/bytes.h"
#include "protocol/core/result.h"
#include "protocol/kafka/record_batch.h"

namespace sluice::protocol::kafka {

/// A cap for decompressed record data when the caller has no better figure (Kafka's default
/// message.max.bytes is 1 MiB; a compressed batch rarely expands past a few dozen MiB).
constexpr std::size_t default_max_decompressed_bytes = std::size_t{64} << 20;

/// How snappy output is framed.
///   raw:    one snappy block (what librdkafka, sarama and kafka-python's non-xerial mode write).
///   xerial: snappy-java's stream: the 16-byte header {0x82 "SNAPPY" 0x00, int32 version = 1,
///           int32 min compatible version = 1}, then blocks of {int32 length, raw snappy block}
///           each holding at most 32 KiB of input (what the Java client writes).
/// Decompression detects the framing by the header, so both are always read.
enum class snappy_framing { raw, xerial };

struct compress_options {
    /// Codec level; 0 = the codec's default (gzip 6, lz4 fast mode, zstd 3). Ignored by snappy.
    int level = 0;
    /// compat: the Java client writes xerial-framed snappy and every client reads it.
    snappy_framing snappy = snappy_framing::xerial;
};

/// Compresses `input` with `codec` and appends the result to `out`. compression::none appends
/// the input unchanged.
result<void> compress(compression codec, bytes_view input, byte_buffer& out,
                      const compress_options& options = {});

/// Decompresses `input` and appends the result to `out`, producing at most `max_output` bytes
/// (errc::too_large beyond). Concatenated gzip members and zstd/lz4 frames are all read.
/// Errors: too_large, compression_error (corrupt, truncated, empty), unsupported_compression.
result<void> decompress(compression codec, bytes_view input, byte_buffer& out,
                        std::size_t max_output);

/// compat: Kafka before 0.10 (KIP-57) computed the lz4 frame header checksum over the magic
/// number as well, so frames inside magic 0 messages carry a wrong checksum. This decoder
/// ignores the header checksum of the first frame and is otherwise decompress(lz4, ...).
result<void> decompress_lz4_ignoring_header_checksum(bytes_view input, byte_buffer& out,
                                                     std::size_t max_output);

/// True when `data` starts with the xerial snappy-java stream magic.
bool is_xerial_snappy(bytes_view data);

}  // namespace sluice::protocol::kafka
