// The records interface of a backend (owned by backend/api): appending record batches to
// partitions (produce), reading them back (fetch, parked until data or a deadline), finding
// offsets (earliest, latest, by time) and moving a partition's start (delete records).
//
// Records cross this interface as Kafka record batches (magic 2), the storage format of the
// log: a front that receives something else (JSON over HTTP, an SQS message) builds batches
// with protocol/kafka/record_batch_builder.h, and a front that must look inside fetched batches
// decodes them with protocol/kafka/record.h.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "backend/api/common.h"
#include "protocol/core/ids.h"
#include "protocol/core/result.h"
#include "protocol/core/uuid.h"
#include "protocol/kafka/codec.h"

namespace sluice::backend::api {

/// When a produce is answered (Kafka's acks).
enum class acks : std::int8_t {
    none = 0,    // never waits: answered once handed to the partition (errors are lost)
    leader = 1,  // once appended
    all = -1,    // once durable as the backend's flush policy defines (native: fsynced)
};

/// Which records a reader may see.
enum class isolation : std::int8_t {
    read_uncommitted = 0,  // everything up to the high watermark
    read_committed = 1,    // up to the last stable offset; aborted transactions are listed
};

// --- produce -----------------------------------------------------------------------------

struct produce_partition {
    partition_id partition;
    /// One or more complete record batches (magic 2). The backend may rewrite the fields
    /// outside the CRC in place (base offset, partition leader epoch, and the timestamps under
    /// LogAppendTime); the bytes must stay valid until produce() completes.
    std::span<std::byte> batches;
};

struct produce_topic {
    topic_name topic;
    std::vector<produce_partition> partitions;
};

struct produce_request {
    std::vector<produce_topic> topics;
    api::acks acks = api::acks::all;
    /// The transactional id of a transactional producer; transactional batches without one
    /// fail with transactional_id_required.
    std::optional<transactional_id> txn_id;
    /// KIP-890 (transaction version 2): transactional batches add their partition to the
    /// ongoing transaction themselves (Produce v12), instead of AddPartitionsToTxn first.
    bool implicit_txn_partitions = false;
};

/// One record a produced batch was refused for (compat: Kafka's ProduceResponse.RecordError,
/// KIP-467): the record's position among the partition's records in the request (0-based)
/// and why it was refused.
struct record_error {
    std::int32_t batch_index = 0;
    std::string message;
};

struct produced_partition {
    partition_id partition;
    backend_error error;  // empty: stored
    /// With error invalid_record: the records that caused it, ascending (empty when the batch
    /// as a whole is at fault). The other records failed only because they share the batch.
    std::vector<record_error> record_errors;
    offset base_offset{-1};                // of the first record stored
    std::int64_t log_append_time_ms = -1;  // the time stamped under LogAppendTime, else -1
    offset log_start_offset{-1};
};

struct produced_topic {
    topic_name topic;
    std::vector<produced_partition> partitions;
};

struct produce_result {
    std::vector<produced_topic> topics;  // in request order
};

// --- fetch -------------------------------------------------------------------------------

struct fetch_partition {
    partition_id partition;
    offset fetch_offset{0};
    std::int32_t max_bytes = 1048576;  // for this partition; the first batch may exceed it
};

struct fetch_topic {
    topic_name topic;  // ignored when `id` is set
    uuid id;           // zero: look the topic up by name
    std::vector<fetch_partition> partitions;
};

struct fetch_request {
    std::vector<fetch_topic> topics;
    /// Park until at least this many bytes are available or `max_wait` passed.
    std::int32_t min_bytes = 1;
    std::chrono::milliseconds max_wait{0};
    /// The most the whole answer carries (at least one batch when any is available).
    std::int64_t max_bytes = 52428800;
    api::isolation isolation = api::isolation::read_uncommitted;
    /// Where filling starts in the flattened list of partitions: when max_bytes cuts the
    /// answer short, callers rotate this so that the partitions left out vary.
    std::size_t first_partition = 0;
};

struct aborted_transaction {
    producer_id producer;
    offset first_offset{-1};
};

struct fetched_partition {
    partition_id partition;
    backend_error error;  // empty: read (records may still be empty)
    offset high_watermark{-1};
    offset last_stable_offset{-1};
    offset log_start_offset{-1};
    /// Whole batches as stored: file regions the connection may send with sendfile, or
    /// memory chunks.
    protocol::kafka::records records = protocol::kafka::records::empty();
    /// read_committed only: the aborted transactions whose data lies in `records`.
    std::vector<aborted_transaction> aborted;
};

struct fetched_topic {
    topic_name topic;  // as found (also for a lookup by id); as asked when unknown
    uuid id;
    std::vector<fetched_partition> partitions;  // in request order
};

struct fetch_result {
    std::vector<fetched_topic> topics;  // in request order
};

// --- offsets -----------------------------------------------------------------------------

/// What ListOffsets asks for.
struct offset_spec {
    enum class kind : std::int8_t {
        earliest,        // the log start offset
        latest,          // the high watermark (read_committed: the last stable offset)
        max_timestamp,   // the record with the largest timestamp (KIP-734)
        timestamp,       // the first record with a timestamp at or after `timestamp_ms`
        earliest_local,  // the first offset stored locally (no tiered storage: earliest)
        latest_tiered,   // the last offset in tiered storage (none: -1)
    };
    kind what = kind::latest;
    std::int64_t timestamp_ms = -1;
};

struct offset_query {
    topic_name topic;
    partition_id partition;
    offset_spec spec;
};

struct found_offset {
    backend_error error;  // empty: found (off may still be -1)
    offset off{-1};  // -1: no such record
    std::int64_t timestamp = -1;
    std::int32_t leader_epoch = -1;
};

struct delete_records_request {
    topic_name topic;
    partition_id partition;
    offset before{-1};  // -1: the high watermark
};

/// Reading and writing records.
///
/// Ordering: the appends of produce() calls made from one executor (one connection) to a
/// partition happen in the order of the calls, even when a call has to wait before it can
/// append (the native backend loads a partition's producer state off the io threads). Calls
/// from different executors are ordered by the backend as they arrive.
/// Concurrency: every method may be called from any thread; awaitables resume on the
/// caller's executor, which must not run handlers concurrently (an io_context run by one
/// thread, or a strand).
class records {
  public:
    virtual ~records() = default;

    /// Appends every partition's batches, then waits as `acks` asks. Per-partition errors:
    /// unknown_topic_or_partition, internal_topic, corrupt_message, message_too_large,
    /// record_list_too_large, invalid_record, out_of_order_sequence, invalid_producer_epoch,
    /// invalid_txn_state, transaction_abortable, transactional_id_required,
    /// invalid_producer_id_mapping, producer_fenced, concurrent_transactions,
    /// coordinator_loading, coordinator_not_available, storage_error, not_leader.
    virtual awaitable<produce_result> produce(produce_request req) = 0;

    /// Reads every partition from its offset, parking (without polling) until min_bytes are
    /// available, an error occurs or max_wait passes. A response that max_bytes ended
    /// while more data was there is answered at once, whatever min_bytes asks: waiting cannot
    /// make it fuller. Per-partition errors:
    /// unknown_topic_or_partition, unknown_topic_id, offset_out_of_range, storage_error.
    virtual awaitable<fetch_result> fetch(fetch_request req) = 0;

    /// One answer per query, in order. Errors: unknown_topic_or_partition, storage_error.
    virtual awaitable<std::vector<found_offset>> list_offsets(std::vector<offset_query> queries,
                                                              api::isolation isolation) = 0;

    /// Moves each partition's log start offset up (durably). One answer per request: the new
    /// log start, or unknown_topic_or_partition / offset_out_of_range / storage_error.
    virtual awaitable<std::vector<backend_result<offset>>> delete_records(
        std::vector<delete_records_request> reqs) = 0;

    /// Fetches parked right now, waiting for data or their deadline (for /metrics).
    virtual std::int64_t parked_fetches() const = 0;
};

}  // namespace sluice::backend::api
