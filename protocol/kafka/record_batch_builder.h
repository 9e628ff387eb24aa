// Builds v2 record batches: from records (key, value, headers, timestamp) to the bytes a
// producer would send, CRC and compression included. Used by the REST and SQS fronts, the
// internal topics (committed offsets, producer and queue state), the conversion of legacy
// message sets, and tests.
//
// Owned by the protocol module. The layout written is the one record_batch.h and record.h
// describe. Uncompressed records are encoded straight into the output buffer behind a
// reserved header; a compressed batch compresses that records section once into the final
// buffer. The CRC is computed once, at finish().
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <system_error>

#include "protocol/core/bytes.h"
#include "protocol/core/result.h"
#include "protocol/kafka/compression.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch.h"

namespace sluice::protocol::kafka {

/// A record to append: views the caller keeps alive until add() returns.
struct new_record {
    std::optional<bytes_view> key;
    std::optional<bytes_view> value;
    std::span<const header_view> headers;
    std::int64_t timestamp = -1;  // milliseconds since the epoch (create time)
};

/// The batch-level fields. Offsets are normally assigned later by the log (set_base_offset).
struct batch_options {
    compression codec = compression::none;
    compress_options compression_options;
    std::int64_t base_offset = 0;
    std::int32_t partition_leader_epoch = -1;
    std::int64_t producer_id = -1;
    std::int16_t producer_epoch = -1;
    std::int32_t base_sequence = -1;
    bool transactional = false;
    bool control = false;
    /// Sets the timestamp-type bit: readers then take max_timestamp as every record's time.
    bool log_append_time = false;
};

/// Accumulates records and produces one batch.
///
/// base_timestamp is the first record's timestamp (later ones may be smaller: deltas are
/// signed), max_timestamp the largest; offset deltas are 0, 1, 2, ... in add() order. A record
/// or batch too big for the format's int32 lengths makes finish() fail with errc::too_large.
///
/// Lifecycle: construct, add() any number of records, finish() once; the builder is then
/// empty and may be reused with the same options. Not thread-safe.
class record_batch_builder {
public:
    explicit record_batch_builder(batch_options options = {});

    /// Reserves room for about `bytes` of encoded records.
    void reserve(std::size_t bytes);
    void add(const new_record& record);
    void add(std::optional<bytes_view> key, std::optional<bytes_view> value, std::int64_t timestamp,
             std::span<const header_view> headers = {}) {
        add(new_record{key, value, headers, timestamp});
    }

    std::int32_t record_count() const { return count_; }
    /// Bytes of the batch so far before compression, header included (for size-based limits).
    std::size_t uncompressed_size() const { return buffer_.size(); }

    /// The finished batch. An empty batch (no records) has last_offset_delta 0 and timestamps
    /// -1. Errors: too_large (a length past int32), compression_error.
    result<byte_buffer> finish();

    /// Bytes add() would append for this record (its length varint included).
    static std::size_t encoded_record_size(const new_record& record, std::int32_t offset_delta,
                                           std::int64_t timestamp_delta);

private:
    void reset();

    batch_options options_;
    byte_buffer buffer_;  // reserved header, then the encoded records
    std::int32_t count_ = 0;
    std::int64_t base_timestamp_ = -1;
    std::int64_t max_timestamp_ = -1;
    std::error_code error_;
};

/// Builds the control batch an EndTxn leaves in a partition: one commit or abort marker,
/// transactional and control flags set, base_sequence -1, offset delta 0.
result<byte_buffer> build_control_batch(control_record_type type, std::int64_t producer_id,
                                        std::int16_t producer_epoch, std::int32_t coordinator_epoch,
                                        std::int64_t timestamp_ms);

}  // namespace sluice::protocol::kafka
