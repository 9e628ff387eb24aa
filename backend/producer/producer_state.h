// Idempotent-producer and transaction state of one partition (owned by backend/producer): per
// producer id the epoch and the last five batches' sequence numbers and offsets, the open
// transactions (for the last stable offset) and the aborted transactions (for read_committed
// fetches). The produce path checks batches against it inside the partition's append critical
// section (append_guard, an append_validator); the state itself is rebuilt from the log.
//
// compat: the rules are Kafka's ProducerAppendInfo / ProducerStateEntry / ProducerStateManager
// (3.9): NUM_BATCHES_TO_RETAIN = 5, duplicates answered with the original offsets, a new epoch
// must start at sequence 0, an unknown producer (or one whose entry expired) may start at any
// sequence, so a 3.x broker never answers UNKNOWN_PRODUCER_ID to Produce.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/log/partition_log.h"
#include "protocol/core/bytes.h"
#include "protocol/core/ids.h"
#include "protocol/core/result.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch.h"

namespace sluice::backend::producer {

/// Sequence numbers and offsets of one appended batch.
struct batch_metadata {
    std::int32_t first_seq = -1;
    std::int32_t last_seq = -1;
    std::int64_t first_offset = -1;
    std::int64_t last_offset = -1;
    std::int64_t timestamp = -1;
};

/// What a partition remembers of one producer id.
struct producer_entry {
    static constexpr std::size_t batches_to_retain = 5;

    std::int16_t epoch = -1;
    std::int32_t coordinator_epoch = -1;
    std::int64_t last_timestamp = -1;
    std::int64_t current_txn_first_offset = -1;  // -1: no transaction open in this partition
    std::deque<batch_metadata> batches;          // oldest first, at most batches_to_retain

    std::int32_t last_seq() const { return batches.empty() ? -1 : batches.back().last_seq; }
    std::int64_t last_offset() const { return batches.empty() ? -1 : batches.back().last_offset; }
};

/// A transaction that ended with an abort marker: fetches at read_committed get the producer id
/// and first offset of those overlapping what they read.
struct aborted_txn {
    std::int64_t producer_id = -1;
    std::int64_t first_offset = -1;
    std::int64_t last_offset = -1;  // the abort marker's offset
    bool operator==(const aborted_txn&) const = default;
};

/// One producer as DescribeProducers reports it.
struct described_producer {
    std::int64_t producer_id = -1;
    std::int16_t epoch = -1;
    std::int32_t last_sequence = -1;
    std::int64_t last_timestamp = -1;
    std::int32_t coordinator_epoch = -1;
    std::int64_t current_txn_start_offset = -1;
};

/// The state of one partition.
///
/// Snapshot file `<partition dir>/<end offset, 20 digits>.snapshot` (all big-endian):
///   u32 magic "SLPS", u16 version = 1, u32 CRC-32C of everything after it,
///   i64 end offset (the state covers the log below it),
///   i32 producer count, per producer: i64 id, i16 epoch, i32 coordinator epoch,
///       i64 last timestamp, i64 current transaction first offset (-1 none),
///       i8 batch count, per batch: i32 first seq, i32 last seq, i64 first offset,
///       i64 last offset, i64 timestamp,
///   i32 aborted count, per aborted transaction: i64 producer id, i64 first offset,
///       i64 last offset.
/// A snapshot is a start-up shortcut, never the only copy: loading takes the newest snapshot
/// whose end offset is inside the log and replays the log from there; a damaged snapshot is
/// skipped (the log is replayed from further back).
///
/// Concurrency: thread-safe (one mutex). Lock order: a partition's append lock, then this
/// mutex; nothing here calls into the log while holding it.
/// Invariant: every batch carrying a producer id reaches the log through an append_guard on
/// this state (the produce path and the transaction markers), so the state never misses one;
/// batches without a producer id may bypass it.
class partition_producer_state {
public:
    partition_producer_state(std::string topic, partition_id partition);

    const std::string& topic() const { return topic_; }
    partition_id partition() const { return partition_; }

    /// Applies a stored batch (replay, or an append that passed the checks). `marker` is the
    /// end-transaction marker of a control batch.
    void apply(const protocol::kafka::batch_header& h,
               std::optional<protocol::kafka::end_txn_marker> marker);
    /// Applies the batch at the start of `batch` (decoding the marker of a control batch).
    void apply_stored(protocol::bytes_view batch);

    /// The last stable offset: the first offset of the earliest open transaction, else
    /// `high_watermark`.
    offset last_stable_offset(offset high_watermark) const;
    /// Aborted transactions with a marker at or after `from` whose data starts before `upper`
    /// (Kafka's collectAbortedTransactions), in marker order.
    std::vector<aborted_txn> aborted_between(std::int64_t from, std::int64_t upper) const;
    /// True when `pid` has data of an open transaction in this partition.
    bool has_ongoing_txn(std::int64_t pid) const;
    std::optional<producer_entry> entry(std::int64_t pid) const;
    std::vector<described_producer> describe() const;
    /// The offset after the last batch the state has seen.
    std::int64_t end_offset() const;
    /// The smallest first offset of an open transaction (-1: none).
    std::int64_t first_ongoing_offset() const;

    // --- what compaction removed (backend/log/compactor.cc) -------------------------------
    /// Drops the aborted transactions whose abort marker a compaction of `log` removed while it
    /// was open (partition_log::removed_markers): a client told about a transaction skips the
    /// producer's transactional batches until it reads the marker, so without the marker it
    /// would skip the producer's later committed transactions too. Call before
    /// aborted_between(). Idempotent. Takes the log's lock, then this state's, never both.
    void forget_removed(const log::partition_log& log);
    /// Drops the aborted transactions of producer `pid` whose marker is at `marker`.
    void forget_aborted(std::int64_t pid, std::int64_t marker);
    /// The open transactions: first offset -> producer id.
    std::map<std::int64_t, std::int64_t> ongoing() const;
    /// Ends the open transaction of `pid` that starts at `first` without a marker (the load
    /// found its data and its marker removed by compaction).
    void end_lost_txn(std::int64_t pid, std::int64_t first);

    /// Drops producers idle since before now - expiration_ms that have no open transaction
    /// (producer.id.expiration.ms), and aborted transactions below the log start. Returns the
    /// producers removed.
    std::size_t expire(std::int64_t now_ms, std::int64_t expiration_ms, std::int64_t log_start);

    /// Snapshot bytes (format above) and the end offset they cover.
    protocol::byte_buffer encode_snapshot(std::int64_t& end) const;
    /// Replaces the state with a snapshot's. invalid_value/corrupt errors leave it unchanged.
    result<void> load_snapshot(protocol::bytes_view bytes);
    /// True when the state changed since the last mark_snapshotted().
    bool dirty() const;
    void mark_snapshotted(std::int64_t end);
    std::int64_t snapshot_end() const;

    // --- checks of an append (append_guard) -----------------------------------------------
    /// Validates data batch `h` for the offset it would get against `e` (the producer's entry
    /// as of the previous batches of the same append) and, on success, updates `e`.
    /// `verified`: the transaction coordinator confirmed that this transactional batch belongs
    /// to an ongoing transaction (required when none is open in this partition yet).
    static result<std::optional<log::append_result>> check_data(
        producer_entry& e, const protocol::kafka::batch_header& h, std::int64_t next_offset,
        bool verified);
    /// Validates an end-transaction marker against `e`.
    static result<void> check_marker(const producer_entry& e, std::int16_t epoch,
                                     std::int32_t coordinator_epoch);

private:
    void apply_locked(const protocol::kafka::batch_header& h,
                      std::optional<protocol::kafka::end_txn_marker> marker);
    void forget_aborted_locked(std::int64_t pid, std::int64_t marker);

    const std::string topic_;
    const partition_id partition_;

    mutable std::mutex mu_;
    std::unordered_map<std::int64_t, producer_entry> producers_;
    std::map<std::int64_t, std::int64_t> ongoing_;  // first offset -> producer id
    std::deque<aborted_txn> aborted_;               // ascending by last_offset
    std::int64_t end_ = 0;
    std::uint64_t changes_ = 0;            // bumped by every apply / expire
    std::uint64_t snapshotted_changes_ = 0;
    std::int64_t snapshot_end_ = -1;
    std::size_t removals_seen_ = 0;  // forget_removed(): the log's removed markers applied
};

/// The append_validator the produce path and the marker writer hand to partition_log::append:
/// checks every batch against the partition's producer state inside the append lock, reports
/// duplicates (the log then answers with the original offsets and writes nothing), and applies
/// the batches to the state once they are written. One guard per append call.
class append_guard final : public log::append_validator {
public:
    /// `verified`: transactional batches were checked with the transaction coordinator.
    append_guard(partition_producer_state& state, bool verified)
        : state_(state), verified_(verified) {}
    /// A guard for one end-transaction marker.
    append_guard(partition_producer_state& state, protocol::kafka::end_txn_marker marker)
        : state_(state), marker_(marker) {}

    result<std::optional<log::append_result>> check(const protocol::kafka::batch_header& h,
                                                    offset next_offset) override;
    void appended(const protocol::kafka::batch_header& h) override;

private:
    partition_producer_state& state_;
    bool verified_ = false;
    std::optional<protocol::kafka::end_txn_marker> marker_;
    std::unordered_map<std::int64_t, producer_entry> scratch_;  // entries as of earlier batches
};

}  // namespace sluice::backend::producer
