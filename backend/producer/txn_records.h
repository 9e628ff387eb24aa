// The records of the __transaction_state internal topic (owned by backend/producer): one per
// transactional id (its latest metadata; compaction keeps the newest) and one for the producer
// id blocks handed out. Our own layout (all big-endian, strings as i16 length + bytes):
//
//   key   i16 key type: 0 = transaction, followed by string transactional id
//                       1 = producer id block (nothing follows)
//   value (type 0), version 0:
//         i16 version, i64 producer id, i64 last producer id, i64 next producer id,
//         i16 producer epoch, i16 last producer epoch, i32 timeout ms, i8 state,
//         i64 start ms, i64 last update ms, i8 flags (bit 0: KIP-890 transaction version 2),
//         i32 partition count, per partition: string topic, i32 partition,
//         i32 group count, per group: string group id, i32 offset count, per offset:
//             string topic, i32 partition, i64 offset, i32 leader epoch,
//             i16 metadata length (-1 null) + bytes
//         a null value (tombstone) removes an expired transactional id.
//   value (type 1), version 0: i16 version, i64 end of the reserved block (ids below it may
//         have been handed out; the next start uses ids from there on).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "protocol/core/bytes.h"
#include "protocol/core/result.h"

namespace sluice::backend::producer {

/// compat: Kafka's TransactionState; the names are what DescribeTransactions and
/// ListTransactions report.
enum class txn_state : std::int8_t {
    empty = 0,
    ongoing = 1,
    prepare_commit = 2,
    prepare_abort = 3,
    complete_commit = 4,
    complete_abort = 5,
    dead = 6,
    prepare_epoch_fence = 7,
};

const char* txn_state_name(txn_state s);
std::optional<txn_state> parse_txn_state(std::string_view name);

struct topic_partition {
    std::string topic;
    std::int32_t partition = 0;
    auto operator<=>(const topic_partition&) const = default;
};

/// An offset a transaction commits for a group when it commits.
struct pending_offset {
    std::int64_t offset = -1;
    std::int32_t leader_epoch = -1;
    std::optional<std::string> metadata;
    bool operator==(const pending_offset&) const = default;
};

/// What the coordinator knows of one transactional id (Kafka's TransactionMetadata).
struct txn_metadata {
    std::int64_t producer_id = -1;
    std::int64_t last_producer_id = -1;
    std::int64_t next_producer_id = -1;  // KIP-890: the id after an epoch overflow
    std::int16_t producer_epoch = -1;
    std::int16_t last_producer_epoch = -1;
    std::int32_t timeout_ms = 60000;
    txn_state state = txn_state::empty;
    std::int64_t start_ms = -1;
    std::int64_t last_update_ms = -1;
    bool tv2 = false;
    std::set<topic_partition> partitions;
    /// Groups added with AddOffsetsToTxn (or implicitly), with their pending offsets.
    std::map<std::string, std::map<topic_partition, pending_offset>> groups;

    bool operator==(const txn_metadata&) const = default;
};

struct txn_key {
    std::string transactional_id;
};
struct pid_block_key {};
using txn_record_key = std::variant<txn_key, pid_block_key>;

protocol::byte_buffer encode_txn_key(const std::string& transactional_id);
protocol::byte_buffer encode_pid_block_key();
protocol::byte_buffer encode_txn_value(const txn_metadata& m);
protocol::byte_buffer encode_pid_block_value(std::int64_t block_end);

result<txn_record_key> decode_txn_record_key(protocol::bytes_view key);
result<txn_metadata> decode_txn_value(protocol::bytes_view value);
result<std::int64_t> decode_pid_block_value(protocol::bytes_view value);

}  // namespace sluice::backend::producer
