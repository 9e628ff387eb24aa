// The transactions interface of a backend (owned by backend/api): producer ids and epochs for
// idempotent and transactional producers, the transaction coordinator's calls (Kafka's
// AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, in both protocol generations:
// the classic one and KIP-890 transaction version 2), and the observation calls of KIP-664.
// Transactional produce itself goes through records::produce with the transactional id.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/api/common.h"
#include "protocol/core/ids.h"

namespace sluice::backend::api {

struct producer_identity {
    producer_id id = no_producer_id;
    producer_epoch epoch = no_producer_epoch;
};

struct txn_partition {
    topic_name topic;
    partition_id partition;
    bool operator==(const txn_partition&) const = default;
};

/// One consumed offset of TxnOffsetCommit, committed with the transaction.
struct txn_offset {
    topic_name topic;
    partition_id partition;
    offset committed{-1};
    std::int32_t leader_epoch = -1;
    std::optional<std::string> metadata;
};

struct txn_offset_commit_request {
    transactional_id txn_id;
    producer_identity producer;
    sluice::group_id group_id;
    /// The consumer-group member committing (KIP-447); generation -1 and an empty member id
    /// skip the membership check.
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::int32_t generation_id = -1;
    std::vector<txn_offset> offsets;
    /// KIP-890 (TxnOffsetCommit v5): adds the group when AddOffsetsToTxn was not sent.
    bool implicit = false;
};

struct described_transaction {
    transactional_id txn_id;
    backend_error error;  // transactional_id_not_found, coordinator_loading, ...
    std::string state;      // Kafka's names: Empty, Ongoing, PrepareCommit, ...
    std::int32_t timeout_ms = 0;
    std::int64_t start_ms = -1;
    producer_identity producer;
    std::vector<txn_partition> partitions;
};

struct listed_transaction {
    transactional_id txn_id;
    producer_id producer = no_producer_id;
    std::string state;
};

struct transaction_filter {
    std::vector<std::string> states;        // Kafka's state names; empty: any
    std::vector<producer_id> producers;     // empty: any
    std::int64_t min_duration_ms = -1;      // running at least this long; -1: any
    std::optional<std::string> id_pattern;  // an RE2 pattern the whole id must match
};

struct listed_transactions {
    std::vector<listed_transaction> transactions;
    std::vector<std::string> unknown_states;  // filters that name no state
};

/// One idempotent or transactional producer of a partition (DescribeProducers).
struct active_producer {
    producer_identity producer;
    std::int32_t last_sequence = -1;
    std::int64_t last_timestamp = -1;
    std::int32_t coordinator_epoch = -1;
    offset current_txn_start_offset{-1};
};

/// Concurrency: every method may be called from any thread; awaitables resume on the
/// caller's executor. Every answer that changes state waits until the change is durable.
class transactions {
  public:
    virtual ~transactions() = default;

    /// InitProducerId. Without a transactional id: a fresh producer id with epoch 0. With one:
    /// fences older epochs (aborting an open transaction first) and bumps the epoch;
    /// `expected` (KIP-360, none: no_producer_id/no_producer_epoch) lets a producer keep its id.
    /// Errors: invalid_transaction_timeout, producer_fenced, concurrent_transactions,
    /// coordinator_loading, coordinator_not_available, invalid_request.
    virtual awaitable<backend_result<producer_identity>> init_producer_id(
        std::optional<transactional_id> txn_id, std::int32_t timeout_ms,
        producer_identity expected) = 0;
    /// AddPartitionsToTxn; `verify_only` (v4+ broker verification) changes nothing. One error
    /// per partition, in order.
    virtual awaitable<std::vector<backend_error>> add_partitions(transactional_id txn_id,
                                                                 producer_identity producer,
                                                                 std::vector<txn_partition> parts,
                                                                 bool verify_only) = 0;
    virtual awaitable<backend_result<void>> add_offsets(transactional_id txn_id,
                                                        producer_identity producer,
                                                        sluice::group_id group) = 0;
    /// Records offsets that the group commits when the transaction does.
    virtual awaitable<backend_result<void>> txn_offset_commit(txn_offset_commit_request req) = 0;
    /// EndTxn: commits or aborts once the markers are in every partition of the transaction.
    /// `bump_epoch` (EndTxn v5, KIP-890) answers the id and epoch of the next transaction.
    virtual awaitable<backend_result<producer_identity>> end_txn(transactional_id txn_id,
                                                         producer_identity producer, bool commit,
                                                         bool bump_epoch) = 0;

    virtual awaitable<std::vector<described_transaction>> describe(
        std::vector<transactional_id> ids) = 0;
    /// Errors: invalid_regular_expression.
    virtual awaitable<backend_result<listed_transactions>> list(transaction_filter filter) = 0;
    /// The active producers of a partition. Errors: unknown_topic_or_partition, storage_error.
    virtual awaitable<backend_result<std::vector<active_producer>>> describe_producers(
        topic_name topic, partition_id partition) = 0;

    /// The transaction.version feature level (0-2) clients may use (2: KIP-890).
    virtual std::int16_t transaction_version() const = 0;
};

}  // namespace sluice::backend::api
