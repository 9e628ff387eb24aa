// Record batches (message format v2, "magic 2"): the unit of storage and transfer.
//
// Byte layout (big-endian), as Kafka defines it:
//   0  base_offset            int64
//   8  batch_length           int32   bytes after this field (total size = 12 + batch_length)
//  12  partition_leader_epoch int32
//  16  magic                  int8    = 2
//  17  crc                    uint32  CRC-32C of every byte from offset 21 to the end
//  21  attributes             int16   bits 0-2 compression, 3 timestamp type (1 = log append
//                                     time), 4 transactional, 5 control, 6 delete horizon set
//  23  last_offset_delta      int32
//  27  base_timestamp         int64
//  35  max_timestamp          int64
//  43  producer_id            int64
//  51  producer_epoch         int16
//  53  base_sequence          int32
//  57  records_count          int32
//  61  records...
// base_offset and partition_leader_epoch lie outside the CRC: the broker rewrites them freely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "protocol/core/bytes.h"
#include "protocol/core/result.h"

namespace sluice::protocol::kafka {

constexpr std::size_t batch_header_size = 61;
/// base_offset + batch_length: the part of the header batch_length does not count.
constexpr std::size_t batch_log_overhead = 12;
constexpr std::size_t batch_crc_offset = 17;
constexpr std::size_t batch_attributes_offset = 21;
constexpr std::int8_t current_magic = 2;

enum class compression : std::int8_t { none = 0, gzip = 1, snappy = 2, lz4 = 3, zstd = 4 };

namespace batch_attr {
constexpr std::int16_t compression_mask = 0x07;
constexpr std::int16_t log_append_time = 0x08;
constexpr std::int16_t transactional = 0x10;
constexpr std::int16_t control = 0x20;
constexpr std::int16_t delete_horizon = 0x40;
}  // namespace batch_attr

/// The fixed 61-byte header of a v2 record batch.
struct batch_header {
    std::int64_t base_offset = 0;
    std::int32_t batch_length = 0;
    std::int32_t partition_leader_epoch = -1;
    std::int8_t magic = current_magic;
    std::uint32_t crc = 0;
    std::int16_t attributes = 0;
    std::int32_t last_offset_delta = 0;
    std::int64_t base_timestamp = -1;
    std::int64_t max_timestamp = -1;
    std::int64_t producer_id = -1;
    std::int16_t producer_epoch = -1;
    std::int32_t base_sequence = -1;
    std::int32_t records_count = 0;

    compression codec() const {
        return static_cast<compression>(attributes & batch_attr::compression_mask);
    }
    bool is_transactional() const { return (attributes & batch_attr::transactional) != 0; }
    bool is_control() const { return (attributes & batch_attr::control) != 0; }
    bool uses_log_append_time() const { return (attributes & batch_attr::log_append_time) != 0; }
    bool has_producer_id() const { return producer_id >= 0; }
    std::size_t total_size() const {
        return batch_log_overhead + static_cast<std::size_t>(batch_length);
    }
    std::int64_t last_offset() const { return base_offset + last_offset_delta; }
    /// The sequence of the last record, wrapping at 2^31 as Kafka does.
    std::int32_t last_sequence() const;
};

/// Reads the header fields of the batch at the start of `data`. Checks only that 61 bytes are
/// there; use validate_batch to check a whole batch.
result<batch_header> read_batch_header(bytes_view data);

/// Magic byte of the batch (or legacy message) at the start of `data`: offset 16 in both the
/// v2 layout and the legacy (v0/v1) message layout. -1 when `data` is too short.
int magic_of(bytes_view data);

/// Validates one complete batch: `data` must be exactly one batch. Checks magic, that
/// batch_length matches the size, that the header counts are sane (records_count >= 0,
/// last_offset_delta consistent with records_count for uncompressed batches), and the CRC.
result<batch_header> validate_batch(bytes_view data);

/// Walks a buffer of concatenated batches (a produce payload or a stretch of a segment).
/// next() returns each batch's bytes in turn; a partial trailing batch is reported through
/// truncated_tail() rather than as an error, since fetch responses may end mid-batch.
class batch_cursor {
public:
    explicit batch_cursor(bytes_view data) : data_(data) {}

    /// The next complete batch (header checked for size only), or an empty span at the end.
    bytes_view next();
    /// Offset in the input where the unread part starts.
    std::size_t position() const { return pos_; }
    /// True when the input ended with an incomplete batch.
    bool truncated_tail() const { return truncated_; }
    /// True when a header was malformed (negative or too small length).
    bool malformed() const { return malformed_; }

private:
    bytes_view data_;
    std::size_t pos_ = 0;
    bool truncated_ = false;
    bool malformed_ = false;
};

/// CRC-32C over the CRC-covered part of a batch (from attributes to the end).
std::uint32_t compute_batch_crc(bytes_view batch);

// In-place rewrites of fields outside the CRC.
void set_base_offset(std::span<std::byte> batch, std::int64_t base_offset);
void set_partition_leader_epoch(std::span<std::byte> batch, std::int32_t epoch);

/// Sets the log-append-time flag and both timestamps to `timestamp_ms`, then recomputes the
/// CRC (these fields are inside it). Used for topics with message.timestamp.type=LogAppendTime.
void set_log_append_time(std::span<std::byte> batch, std::int64_t timestamp_ms);

/// Writes the header fields of `h` into the first 61 bytes of `batch` (CRC included as given).
void write_batch_header(std::span<std::byte> batch, const batch_header& h);

}  // namespace sluice::protocol::kafka
