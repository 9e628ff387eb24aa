// The requests and answers of the group coordinator's API (owned by backend/group), independent
// of Kafka API versions: the Kafka front fills these from the decoded requests and maps the
// answers (and their errc) back. Plain values; no behaviour.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include "backend/group/assignor.h"
#include "backend/group/group_records.h"
#include "protocol/core/ids.h"
#include "protocol/core/uuid.h"

namespace sluice::backend::group {

/// Who sent a request (recorded on members; shown by DescribeGroups).
struct client_info {
    std::string client_id;
    std::string client_host;
};

// --- classic protocol ------------------------------------------------------------------------

struct protocol_metadata {
    std::string name;
    std::vector<std::byte> metadata;
    bool operator==(const protocol_metadata&) const = default;
};

struct join_group_request {
    std::string group_id;
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::string protocol_type;
    std::vector<protocol_metadata> protocols;
    std::int32_t session_timeout_ms = 0;
    std::int32_t rebalance_timeout_ms = -1;  // -1 (v0): the session timeout
    /// JoinGroup v4+: a member without id first gets MEMBER_ID_REQUIRED and an id.
    bool require_known_member_id = false;
    /// JoinGroup v9+: a static leader rejoining a Stable group may skip the assignment.
    bool supports_skip_assignment = false;
    std::optional<std::string> reason;
    client_info client;
};

struct join_group_member {
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::vector<std::byte> metadata;
};

struct join_group_result {
    std::error_code error;
    std::int32_t generation_id = -1;
    std::optional<std::string> protocol_type;
    std::optional<std::string> protocol_name;
    std::string leader;
    bool skip_assignment = false;
    std::string member_id;
    std::vector<join_group_member> members;  // the leader's copy only
};

struct sync_group_request {
    std::string group_id;
    std::int32_t generation_id = -1;
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::optional<std::string> protocol_type;  // v5+
    std::optional<std::string> protocol_name;  // v5+
    std::map<std::string, std::vector<std::byte>> assignments;  // the leader's
};

struct sync_group_result {
    std::error_code error;
    std::optional<std::string> protocol_type;
    std::optional<std::string> protocol_name;
    std::vector<std::byte> assignment;
};

struct heartbeat_request {
    std::string group_id;
    std::int32_t generation_id = -1;
    std::string member_id;
    std::optional<std::string> group_instance_id;
};

struct leave_member {
    std::string member_id;  // empty with a group_instance_id: remove that static member
    std::optional<std::string> group_instance_id;
    std::optional<std::string> reason;
};

struct leave_member_result {
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::error_code error;
};

struct leave_group_result {
    std::error_code error;  // group-level (e.g. unknown group)
    std::vector<leave_member_result> members;
};

// --- KIP-848 consumer protocol ----------------------------------------------------------------

struct owned_partitions {
    uuid topic_id;
    std::vector<std::int32_t> partitions;
};

struct consumer_heartbeat_request {
    std::string group_id;
    std::string member_id;
    std::int32_t member_epoch = 0;
    std::optional<std::string> instance_id;
    std::optional<std::string> rack_id;
    std::int32_t rebalance_timeout_ms = -1;
    std::optional<std::vector<std::string>> subscribed_topic_names;
    std::optional<std::string> subscribed_topic_regex;
    std::optional<std::string> server_assignor;
    std::optional<std::vector<owned_partitions>> topic_partitions;
    client_info client;
};

struct consumer_heartbeat_result {
    std::error_code error;
    std::optional<std::string> error_message;
    std::string member_id;
    std::int32_t member_epoch = 0;
    std::int32_t heartbeat_interval_ms = 0;
    std::optional<std::vector<owned_partitions>> assignment;
};

// --- offsets ---------------------------------------------------------------------------------

struct commit_partition {
    std::int32_t partition = 0;
    offset committed{-1};
    std::int32_t leader_epoch = -1;
    std::optional<std::string> metadata;
};

struct commit_topic {
    std::string name;
    std::vector<commit_partition> partitions;
};

struct offset_commit_request {
    std::string group_id;
    std::int32_t generation_id_or_member_epoch = -1;
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::int64_t retention_time_ms = -1;  // v2-4; -1 = broker default
    std::int16_t api_version = 0;
    std::vector<commit_topic> topics;
};

struct commit_partition_result {
    std::int32_t partition = 0;
    std::error_code error;
};

struct commit_topic_result {
    std::string name;
    std::vector<commit_partition_result> partitions;
};

struct offset_commit_result {
    std::vector<commit_topic_result> topics;
};

struct fetch_topic {
    std::string name;
    std::vector<std::int32_t> partitions;
};

struct offset_fetch_request {
    std::string group_id;
    std::optional<std::string> member_id;  // v9+
    std::int32_t member_epoch = -1;        // v9+
    std::optional<std::vector<fetch_topic>> topics;  // null: every committed partition
    bool require_stable = false;
};

struct fetched_partition {
    std::int32_t partition = 0;
    offset committed{-1};
    std::int32_t leader_epoch = -1;
    std::optional<std::string> metadata;
    std::error_code error;
};

struct fetched_topic {
    std::string name;
    std::vector<fetched_partition> partitions;
};

struct offset_fetch_result {
    std::string group_id;
    std::error_code error;  // group-level
    std::vector<fetched_topic> topics;
};

struct offset_delete_result {
    std::error_code error;  // group-level
    std::vector<commit_topic_result> topics;
};

// --- admin and observation -------------------------------------------------------------------

struct listed_group {
    std::string group_id;
    std::string protocol_type;
    std::string state;  // Kafka's names: Empty, Stable, PreparingRebalance, Assigning, ...
    std::string type;   // "classic" or "consumer"
};

struct described_member {
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::string client_id;
    std::string client_host;
    std::vector<std::byte> metadata;    // Stable classic groups only
    std::vector<std::byte> assignment;  // Stable classic groups only
};

struct described_group {
    std::error_code error;
    std::string group_id;
    std::string state;
    std::string protocol_type;
    std::string protocol_data;  // the selected protocol (Stable)
    std::vector<described_member> members;
};

struct consumer_member_description {
    std::string member_id;
    std::optional<std::string> instance_id;
    std::optional<std::string> rack_id;
    std::int32_t member_epoch = 0;
    std::string client_id;
    std::string client_host;
    std::vector<std::string> subscribed_topic_names;
    std::optional<std::string> subscribed_topic_regex;
    topic_partitions assignment;
    topic_partitions target_assignment;
};

struct consumer_group_description {
    std::error_code error;
    std::optional<std::string> error_message;
    std::string group_id;
    std::string state;
    std::int32_t group_epoch = 0;
    std::int32_t assignment_epoch = 0;
    std::string assignor_name;
    std::vector<consumer_member_description> members;
};

/// A group as GET /v1/groups and the lag metrics see it.
struct group_view {
    struct member {
        std::string member_id;
        std::optional<std::string> instance_id;
        std::string client_id;
        std::string client_host;
        /// Topic -> partitions; empty when the assignment is not known (a non-consumer
        /// protocol, or a classic group that is rebalancing).
        std::map<std::string, std::vector<std::int32_t>> assignment;
    };
    struct partition {
        std::string topic;
        std::int32_t partition = 0;
        std::int64_t committed = -1;
        std::int64_t log_end = -1;  // high watermark; -1 when the partition no longer exists
        std::int64_t lag = -1;      // log_end - committed, or -1 when unknown
        std::optional<std::string> metadata;
    };
    std::string group_id;
    std::string type;
    std::string state;
    std::string protocol_type;
    std::string protocol;
    std::int32_t generation = 0;  // classic generation or consumer group epoch
    std::vector<member> members;
    std::vector<partition> offsets;
};

}  // namespace sluice::backend::group
