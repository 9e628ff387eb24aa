// The records the group coordinator keeps in the internal compacted topic __consumer_offsets
// (owned by backend/group): committed offsets and group state, as keyed records so that
// compaction keeps the latest value per key and a tombstone (null value) removes one.
//
// Every integer is big-endian; "string" is an int16 length and UTF-8 bytes, "nullable string"
// uses length -1 for null, "bytes" is an int32 length and the bytes.
//
//   key   int16 key_type, then
//           key_type 0 (committed offset): string group, string topic, int32 partition
//           key_type 1 (group state):      string group
//
//   value of key_type 0, version 0:
//           int16 version = 0
//           int64 committed_offset
//           int32 leader_epoch          (-1: none)
//           int32-length nullable string metadata
//           int64 commit_timestamp_ms
//           int64 expire_timestamp_ms   (-1: the broker's offsets.retention applies; v2-4
//                                        OffsetCommit may set an explicit retention)
//
//   value of key_type 1, version 0:
//           int16 version = 0
//           int8  kind                  (0 classic, 1 consumer: the KIP-848 protocol)
//           int64 state_timestamp_ms    (when the group entered its current state; offsets
//                                        of an Empty group expire from this time)
//           kind 0: string protocol_type (empty: a "simple" group that only commits offsets)
//                   int32 generation_id
//                   nullable string protocol_name
//                   nullable string leader
//                   int32 member_count, then per member:
//                     string member_id, nullable string group_instance_id,
//                     string client_id, string client_host,
//                     int32 rebalance_timeout_ms, int32 session_timeout_ms,
//                     string protocol_type, bytes metadata (the selected protocol's),
//                     bytes assignment
//           kind 1: int32 group_epoch   (members are not kept: after a restart they rejoin
//                                        with epoch 0 and get their assignment again)
//
// A version this code does not know is skipped at replay with a warning (never trusted).
// Crash behaviour: a record is applied at replay only if its batch passed the CRC check;
// the log truncates a torn tail, so the state after a crash is the state of some prefix of
// the writes, and every write that was acknowledged (flushed) is in that prefix.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "protocol/core/bytes.h"
#include "protocol/core/ids.h"
#include "protocol/core/result.h"

namespace sluice::backend::group {

/// A committed position of one group in one partition.
struct committed_offset {
    offset committed{-1};
    std::int32_t leader_epoch = -1;
    std::optional<std::string> metadata;
    std::int64_t commit_timestamp_ms = 0;
    std::int64_t expire_timestamp_ms = -1;
    bool operator==(const committed_offset&) const = default;
};

/// A classic member as persisted (the parts that survive a restart).
struct stored_member {
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::string client_id;
    std::string client_host;
    std::int32_t rebalance_timeout_ms = 0;
    std::int32_t session_timeout_ms = 0;
    std::string protocol_type;
    std::vector<std::byte> metadata;
    std::vector<std::byte> assignment;
    bool operator==(const stored_member&) const = default;
};

enum class group_kind : std::int8_t { classic = 0, consumer = 1 };

/// The persisted state of a group.
struct stored_group {
    group_kind kind = group_kind::classic;
    std::int64_t state_timestamp_ms = 0;
    // classic
    std::string protocol_type;
    std::int32_t generation_id = 0;
    std::optional<std::string> protocol_name;
    std::optional<std::string> leader;
    std::vector<stored_member> members;
    // consumer
    std::int32_t group_epoch = 0;
    bool operator==(const stored_group&) const = default;
};

struct offset_key {
    std::string group;
    std::string topic;
    std::int32_t partition = 0;
    bool operator==(const offset_key&) const = default;
};
struct group_key {
    std::string group;
    bool operator==(const group_key&) const = default;
};
using record_key = std::variant<offset_key, group_key>;

/// One record to write: the encoded key and value (no value = tombstone).
struct encoded_record {
    std::vector<std::byte> key;
    std::optional<std::vector<std::byte>> value;
};

std::vector<std::byte> encode_key(const record_key& key);
std::vector<std::byte> encode_offset_value(const committed_offset& v);
std::vector<std::byte> encode_group_value(const stored_group& v);

encoded_record offset_record(const std::string& group, const std::string& topic,
                             std::int32_t partition, const committed_offset& v);
encoded_record offset_tombstone(const std::string& group, const std::string& topic,
                                std::int32_t partition);
encoded_record group_record(const std::string& group, const stored_group& v);
encoded_record group_tombstone(const std::string& group);

/// Errors: protocol errc (truncated, invalid_value for an unknown key type or version).
result<record_key> decode_key(protocol::bytes_view bytes);
result<committed_offset> decode_offset_value(protocol::bytes_view bytes);
result<stored_group> decode_group_value(protocol::bytes_view bytes);

}  // namespace sluice::backend::group
