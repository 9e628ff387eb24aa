// The records the group coordinator keeps in the internal compacted topic __consumer_offsets
// (owned by backend/group): committed offsets and group state, as keyed records so that
// compaction keeps the latest value per key and a tombstone (null value) removes one.
//
// The layout is Kafka's own (the group coordinator's message definitions of Kafka 4.0), so
// that tools reading the topic themselves (lag monitors, kafka-consumer-groups) understand it.
// Every integer is big-endian. In a key and in the non-flexible values, "string" is an int16
// length and UTF-8 bytes (-1: null where nullable), "bytes" an int32 length and the bytes,
// "[T]" an int32 count. The KIP-848 values are flexible: "string" is a uvarint of length+1
// (0: null), "[T]" a uvarint of count+1, and every struct (the value and each array element)
// ends with its tagged fields: a uvarint count (we write 0; a reader skips any it finds).
//
//   key    int16 type, then the key's fields
//   value  int16 version, then the value's fields
//
//   type 1  OffsetCommitKey           group, topic, int32 partition
//           OffsetCommitValue v3      int64 offset, int32 leader_epoch, string metadata,
//                                     int64 commit_timestamp
//                             v1      (written when the commit set a retention, OffsetCommit
//                                     v2-4) int64 offset, string metadata,
//                                     int64 commit_timestamp, int64 expire_timestamp
//   type 2  GroupMetadataKey          group
//           GroupMetadataValue v3     string protocol_type, int32 generation,
//                                     nullable protocol, nullable leader,
//                                     int64 current_state_timestamp, [member]:
//                                       member_id, nullable group_instance_id, client_id,
//                                       client_host, int32 rebalance_timeout,
//                                       int32 session_timeout, bytes subscription,
//                                       bytes assignment
//   KIP-848 groups (values version 0, flexible):
//   type 3  group                 ConsumerGroupMetadata: int32 epoch
//   type 4  group                 ConsumerGroupPartitionMetadata: [uuid topic_id, topic_name,
//                                   int32 num_partitions, [partition racks] (written empty)]
//   type 5  group, member_id      ConsumerGroupMemberMetadata: nullable instance_id,
//                                   nullable rack_id, client_id, client_host,
//                                   [subscribed topic name], nullable subscribed_topic_regex,
//                                   int32 rebalance_timeout_ms, nullable server_assignor
//   type 6  group                 ConsumerGroupTargetAssignmentMetadata: int32 assignment_epoch
//   type 7  group, member_id      ConsumerGroupTargetAssignmentMember: [uuid topic_id,
//                                   [int32 partition]]
//   type 8  group, member_id      ConsumerGroupCurrentMemberAssignment: int32 member_epoch,
//                                   int32 previous_member_epoch, int8 state,
//                                   [assigned: uuid, [int32]], [pending revocation: same]
//
// Readers also take every older version Kafka defines (offset values v0-v4, group values
// v0-v4) and sluice's own earlier layout ("legacy": key type 0 for offsets and key type 1 with
// only a group id for group state, values version 0 in an order of sluice's own); replay
// rewrites legacy records in this layout once (offset_store_log.cc). A version or key type
// this code does not know is skipped at replay with a warning (never trusted).
// Crash behaviour: a record is applied at replay only if its batch passed the CRC check;
// the log truncates a torn tail, so the state after a crash is the state of some prefix of
// the writes, and every write that was acknowledged (flushed) is in that prefix.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backend/group/assignor.h"
#include "protocol/core/bytes.h"
#include "protocol/core/ids.h"
#include "protocol/core/result.h"
#include "protocol/core/uuid.h"

namespace sluice::backend::group {

/// The key types of __consumer_offsets (Kafka's "versions" of the record key).
enum class record_type : std::int16_t {
    offset_commit_v0 = 0,  // Kafka's first offset key, and sluice's legacy offset key
    offset_commit = 1,     // also sluice's legacy group-state key (a group id only)
    group_metadata = 2,
    consumer_group_metadata = 3,
    consumer_group_partition_metadata = 4,
    consumer_group_member_metadata = 5,
    consumer_group_target_assignment_metadata = 6,
    consumer_group_target_assignment_member = 7,
    consumer_group_current_member_assignment = 8,
};

/// The longest commit metadata a record can hold (an int16-length string).
inline constexpr std::size_t max_record_metadata_bytes = 32767;

/// A committed position of one group in one partition.
struct committed_offset {
    offset committed{-1};
    std::int32_t leader_epoch = -1;
    std::optional<std::string> metadata;  // written as "" when null (Kafka's NO_METADATA)
    std::int64_t commit_timestamp_ms = 0;
    std::int64_t expire_timestamp_ms = -1;  // -1: offsets.retention applies
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
    std::vector<std::byte> subscription;  // the selected protocol's metadata
    std::vector<std::byte> assignment;
    bool operator==(const stored_member&) const = default;
};

/// The persisted state of a classic group (GroupMetadataValue).
struct stored_group {
    std::int64_t state_timestamp_ms = -1;
    std::string protocol_type;  // empty: a "simple" group that only commits offsets
    std::int32_t generation_id = 0;
    std::optional<std::string> protocol_name;
    std::optional<std::string> leader;
    std::vector<stored_member> members;
    bool operator==(const stored_group&) const = default;
};

/// A KIP-848 member's states, with the values Kafka writes (its MemberState).
enum class member_state : std::int8_t {
    stable = 0,
    unrevoked_partitions = 1,
    unreleased_partitions = 2,
};

/// A topic a KIP-848 group subscribes to, as the group last resolved it.
struct subscribed_topic {
    uuid id;
    std::int32_t partitions = 0;
    bool operator==(const subscribed_topic&) const = default;
};

/// ConsumerGroupMemberMetadataValue: what a KIP-848 member told the coordinator.
struct member_metadata {
    std::optional<std::string> instance_id;
    std::optional<std::string> rack_id;
    std::string client_id;
    std::string client_host;
    std::vector<std::string> subscribed_topic_names;
    std::optional<std::string> subscribed_topic_regex;
    std::int32_t rebalance_timeout_ms = -1;
    std::optional<std::string> server_assignor;
    bool operator==(const member_metadata&) const = default;
};

/// ConsumerGroupCurrentMemberAssignmentValue: where a KIP-848 member is in reconciliation.
struct member_assignment {
    std::int32_t member_epoch = 0;
    std::int32_t previous_member_epoch = -1;
    member_state state = member_state::stable;
    topic_partitions assigned;
    topic_partitions pending_revocation;
    bool operator==(const member_assignment&) const = default;
};

/// sluice's legacy group-state value: a classic group, or the epoch of a KIP-848 group.
struct legacy_group_state {
    bool consumer = false;
    stored_group classic;
    std::int32_t group_epoch = 0;
    std::int64_t state_timestamp_ms = 0;
};

struct offset_key {
    std::string group;
    std::string topic;
    std::int32_t partition = 0;
    bool operator==(const offset_key&) const = default;
};
/// Key type 2 (and the legacy group-state key).
struct group_key {
    std::string group;
    bool operator==(const group_key&) const = default;
};
/// Key types 3, 4 and 6: one record per KIP-848 group.
struct consumer_group_key {
    record_type type = record_type::consumer_group_metadata;
    std::string group;
    bool operator==(const consumer_group_key&) const = default;
};
/// Key types 5, 7 and 8: one record per KIP-848 member.
struct consumer_member_key {
    record_type type = record_type::consumer_group_member_metadata;
    std::string group;
    std::string member_id;
    bool operator==(const consumer_member_key&) const = default;
};
using record_key = std::variant<offset_key, group_key, consumer_group_key, consumer_member_key>;

/// A key read back: `legacy` when it is in sluice's earlier layout (type 0, or type 1 with
/// only a group id), whose value is then read as that layout's.
struct decoded_key {
    record_key key;
    bool legacy = false;
};

/// One record to write: the encoded key and value (no value = tombstone).
struct encoded_record {
    std::vector<std::byte> key;
    std::optional<std::vector<std::byte>> value;
};

std::vector<std::byte> encode_key(const record_key& key);
/// Version 3, or version 1 when the commit has an expire timestamp (as Kafka writes them).
/// The metadata must fit max_record_metadata_bytes (the callers check).
std::vector<std::byte> encode_offset_value(const committed_offset& v);
std::vector<std::byte> encode_group_value(const stored_group& v);
/// Types 3 and 6: an epoch.
std::vector<std::byte> encode_epoch_value(std::int32_t epoch);
std::vector<std::byte> encode_partition_metadata_value(
    const std::map<std::string, subscribed_topic>& topics);
std::vector<std::byte> encode_member_metadata_value(const member_metadata& v);
std::vector<std::byte> encode_target_assignment_value(const topic_partitions& v);
std::vector<std::byte> encode_member_assignment_value(const member_assignment& v);

encoded_record offset_record(const std::string& group, const std::string& topic,
                             std::int32_t partition, const committed_offset& v);
encoded_record offset_tombstone(const std::string& group, const std::string& topic,
                                std::int32_t partition);
encoded_record group_record(const std::string& group, const stored_group& v);
encoded_record group_tombstone(const std::string& group);
/// A record of key type 3, 4 or 6 (`value` null: the tombstone).
encoded_record consumer_group_record(record_type type, const std::string& group,
                                     std::optional<std::vector<std::byte>> value);
/// A record of key type 5, 7 or 8 (`value` null: the tombstone).
encoded_record consumer_member_record(record_type type, const std::string& group,
                                      const std::string& member_id,
                                      std::optional<std::vector<std::byte>> value);

/// Errors: protocol errc (truncated, invalid_length, invalid_value for an unknown key type or
/// value version, or bytes left over).
result<decoded_key> decode_key(protocol::bytes_view bytes);
/// Kafka's versions 0-4; with `legacy`, sluice's earlier version 0 first.
result<committed_offset> decode_offset_value(protocol::bytes_view bytes, bool legacy = false);
/// Kafka's versions 0-4.
result<stored_group> decode_group_value(protocol::bytes_view bytes);
result<legacy_group_state> decode_legacy_group_value(protocol::bytes_view bytes);
result<std::int32_t> decode_epoch_value(protocol::bytes_view bytes);
result<std::map<std::string, subscribed_topic>> decode_partition_metadata_value(
    protocol::bytes_view bytes);
result<member_metadata> decode_member_metadata_value(protocol::bytes_view bytes);
result<topic_partitions> decode_target_assignment_value(protocol::bytes_view bytes);
result<member_assignment> decode_member_assignment_value(protocol::bytes_view bytes);

}  // namespace sluice::backend::group
