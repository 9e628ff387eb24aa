// Records inside a v2 record batch: decoding, iteration (with decompression), the checks a
// broker runs on produced records, and the control records of transactions.
//
// Owned by the protocol module. Used wherever something must look inside a batch: the HTTP,
// WebSocket and SQS fronts, compaction, down-conversion for old fetch versions, and the
// produce path's record checks. Nothing here copies record bytes of an uncompressed batch: a
// record_view points into the batch (or into the decompressed buffer its iterator owns).
//
// Record layout (after the 61-byte batch header, compressed as a whole when the batch is):
//   length           varint   bytes of the record after this field
//   attributes       int8     unused, 0
//   timestamp_delta  varlong  from the batch's base_timestamp
//   offset_delta     varint   from the batch's base_offset
//   key_length       varint   -1 = null
//   key              bytes
//   value_length     varint   -1 = null
//   value            bytes
//   header_count     varint
//   headers          header_count x {key_length varint, key (UTF-8, not null),
//                                    value_length varint (-1 = null), value}
// Every length is checked against the bytes left before it is used; the record must end
// exactly where its length says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>
#include <system_error>
#include <vector>

#include "protocol/core/bytes.h"
#include "protocol/core/result.h"
#include "protocol/kafka/record_batch.h"

namespace sluice::protocol::kafka {

/// One record header: a key (never null) and a nullable value, both views.
struct header_view {
    std::string_view key;
    std::optional<bytes_view> value;
};

/// The headers of one record, decoded lazily from bytes already checked when the record was
/// read (iterating cannot fail). Cheap to copy: a view and a count.
class header_range {
public:
    class iterator {
    public:
        using iterator_category = std::input_iterator_tag;
        using value_type = header_view;
        using difference_type = std::ptrdiff_t;
        using pointer = const header_view*;
        using reference = const header_view&;

        iterator() = default;
        const header_view& operator*() const { return current_; }
        const header_view* operator->() const { return &current_; }
        iterator& operator++() {
            advance();
            return *this;
        }
        iterator operator++(int) {
            iterator old = *this;
            advance();
            return old;
        }
        bool operator==(const iterator& o) const { return left_ == o.left_; }

    private:
        friend class header_range;
        iterator(const std::byte* p, const std::byte* end, std::uint32_t left)
            : pos_(p), end_(end), left_(left) {
            load();
        }
        void advance() {
            --left_;
            load();
        }
        void load();

        const std::byte* pos_ = nullptr;
        const std::byte* end_ = nullptr;
        std::uint32_t left_ = 0;  // headers not yet passed, the current one included
        header_view current_;
    };

    header_range() = default;
    header_range(bytes_view encoded, std::uint32_t count) : encoded_(encoded), count_(count) {}

    std::uint32_t size() const { return count_; }
    bool empty() const { return count_ == 0; }
    iterator begin() const { return {encoded_.data(), encoded_.data() + encoded_.size(), count_}; }
    iterator end() const { return {}; }
    /// The encoded headers (without the count), for copying them into another record as is.
    bytes_view encoded() const { return encoded_; }

private:
    bytes_view encoded_;
    std::uint32_t count_ = 0;
};

/// One decoded record, with its offset and timestamp resolved against the batch header.
/// Views stay valid as long as the batch bytes (uncompressed) or the iterator / decoded_batch
/// that produced it (compressed) are alive.
struct record_view {
    std::int64_t offset = 0;     // base_offset + offset_delta
    std::int64_t timestamp = 0;  // base_timestamp + timestamp_delta, or the batch's
                                 // max_timestamp when the batch uses log append time
    std::int32_t offset_delta = 0;
    std::int64_t timestamp_delta = 0;
    std::int8_t attributes = 0;
    std::optional<bytes_view> key;
    std::optional<bytes_view> value;
    header_range headers;
    bytes_view encoded;  // the whole record, its length varint included
};

/// Decodes the record at the start of `data` (its length varint first). `consumed` receives
/// the bytes the record took. Offset and timestamp are resolved against `header`.
result<record_view> decode_record(bytes_view data, const batch_header& header,
                                  std::size_t& consumed);

struct decoded_batch;

/// Iterates the records of one v2 batch, decompressing the records section first when the
/// batch is compressed (into a buffer the iterator owns, at most `max_decompressed` bytes).
///
/// open() checks the header's structure (magic, length, codec, a records_count the bytes can
/// hold) but not the CRC: call validate_batch first for bytes from the network or disk, or use
/// decode_batch, which does both. next() yields each record; after it returns false, error()
/// tells a clean end from a malformed record, a record count that disagrees with the header,
/// or bytes left after the last record.
///
/// Lifecycle: movable (views into a decompressed buffer survive the move), not copyable.
/// Not thread-safe.
class record_iterator {
public:
    static result<record_iterator> open(bytes_view batch, std::size_t max_decompressed);

    record_iterator(record_iterator&&) noexcept = default;
    record_iterator& operator=(record_iterator&&) noexcept = default;
    record_iterator(const record_iterator&) = delete;
    record_iterator& operator=(const record_iterator&) = delete;

    /// The next record into `out`; false at the end or on the first error.
    bool next(record_view& out);
    /// Set once next() has failed; empty after a clean end.
    std::error_code error() const { return error_; }
    const batch_header& header() const { return header_; }
    /// Records returned so far.
    std::int32_t records_read() const { return read_; }
    /// The (decompressed) records section.
    bytes_view records_bytes() const { return records_; }

private:
    friend result<decoded_batch> decode_batch(bytes_view batch, std::size_t max_decompressed);
    record_iterator() = default;

    batch_header header_;
    byte_buffer decompressed_;
    bytes_view records_;
    std::size_t pos_ = 0;
    std::int32_t read_ = 0;
    std::error_code error_;
};

/// Every record of one batch, decoded at once. Move-only: the views point into `storage`
/// (compressed batches) or into the batch bytes the caller keeps alive (uncompressed).
struct decoded_batch {
    batch_header header;
    std::vector<record_view> records;
    byte_buffer storage;

    decoded_batch() = default;
    decoded_batch(decoded_batch&&) noexcept = default;
    decoded_batch& operator=(decoded_batch&&) noexcept = default;
    decoded_batch(const decoded_batch&) = delete;
    decoded_batch& operator=(const decoded_batch&) = delete;
};

/// validate_batch (size, magic, CRC) and then every record, at most `max_decompressed` bytes
/// after decompression.
result<decoded_batch> decode_batch(bytes_view batch, std::size_t max_decompressed);

/// What a broker checks in the records of a produced batch (Kafka's LogValidator), gathered
/// in one pass over a batch whose header validate_batch accepted.
struct record_summary {
    std::int32_t count = 0;
    /// Offset deltas are exactly 0, 1, ..., count - 1 and last_offset_delta is count - 1
    /// (Kafka rejects produced batches otherwise).
    bool offsets_consecutive = true;
    /// A record has a null key (compacted topics reject such batches).
    bool has_null_key = false;
    /// The positions (0-based, in batch order) of the records with a null key: what a broker
    /// reports per record (KIP-467) when a compacted topic refuses the batch.
    std::vector<std::int32_t> null_key_indexes;
    /// The largest record timestamp (create time), -1 without records.
    std::int64_t max_timestamp = -1;
    /// Size of the records section after decompression.
    std::size_t uncompressed_bytes = 0;
};

/// Reads every record of `batch` (decompressing, bounded) and summarises them. Fails like
/// record_iterator does; the CRC is not checked here.
result<record_summary> summarize_records(bytes_view batch, std::size_t max_decompressed);

// --- control records (transaction markers) ---------------------------------------------

/// Types of control records. compat: Kafka's ControlRecordType; KRaft adds more (2 leader
/// change, 3 snapshot header, 4 snapshot footer) that a data log never holds.
enum class control_record_type : std::int16_t { abort = 0, commit = 1 };

/// Key of a control record: {version int16 = 0, type int16}.
struct control_record_key {
    std::int16_t version = 0;
    std::int16_t type = 0;
};

/// The marker an EndTxn / WriteTxnMarkers leaves in each partition: key as above, value
/// {version int16 = 0, coordinator_epoch int32}.
struct end_txn_marker {
    control_record_type type = control_record_type::abort;
    std::int32_t coordinator_epoch = 0;
};

constexpr std::size_t control_key_size = 4;
constexpr std::size_t end_txn_marker_value_size = 6;

/// Decodes a control record's key (at least 4 bytes; a higher version may append fields).
result<control_record_key> decode_control_key(std::optional<bytes_view> key);

/// Decodes an abort/commit marker from a record of a control batch. Errors: invalid_value for
/// a key of another type, truncated for short fields, invalid_length for a null key or value.
result<end_txn_marker> decode_end_txn_marker(const record_view& record);

/// The 4-byte key and 6-byte value of a marker, as the batch builder writes them.
void encode_control_key(std::byte* out, control_record_type type);
void encode_end_txn_marker_value(std::byte* out, std::int32_t coordinator_epoch);

}  // namespace sluice::protocol::kafka
