// The consumer-groups interface of a backend (owned by backend/api): classic groups
// (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), KIP-848 consumer groups
// (ConsumerGroupHeartbeat), committed offsets, group administration, and a view of every group
// with its lag. The requests and answers are independent of Kafka API versions: the Kafka
// front fills them from decoded requests, the HTTP front from REST consumer instances.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "backend/api/common.h"
#include "backend/api/configs.h"
#include "protocol/core/ids.h"
#include "protocol/core/uuid.h"

namespace sluice::backend::api {

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
    sluice::group_id group_id;
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::string protocol_type;
    std::vector<protocol_metadata> protocols;
    std::int32_t session_timeout_ms = 0;
    std::int32_t rebalance_timeout_ms = -1;  // -1 (v0): the session timeout
    /// JoinGroup v4+: a member without id first gets member_id_required and an id.
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
    backend_error error;
    std::int32_t generation_id = -1;
    std::optional<std::string> protocol_type;
    std::optional<std::string> protocol_name;
    std::string leader;
    bool skip_assignment = false;
    std::string member_id;
    std::vector<join_group_member> members;  // the leader's copy only
};

struct sync_group_request {
    sluice::group_id group_id;
    std::int32_t generation_id = -1;
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::optional<std::string> protocol_type;                   // v5+
    std::optional<std::string> protocol_name;                   // v5+
    std::map<std::string, std::vector<std::byte>> assignments;  // the leader's, by member id
};

struct sync_group_result {
    backend_error error;
    std::optional<std::string> protocol_type;
    std::optional<std::string> protocol_name;
    std::vector<std::byte> assignment;
};

struct heartbeat_request {
    sluice::group_id group_id;
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
    backend_error error;
};

struct leave_group_result {
    backend_error error;  // group-level (e.g. unknown group)
    std::vector<leave_member_result> members;
};

// --- KIP-848 consumer protocol ----------------------------------------------------------------

struct owned_partitions {
    uuid topic_id;
    std::vector<partition_id> partitions;
};

struct consumer_heartbeat_request {
    sluice::group_id group_id;
    std::string member_id;
    std::int32_t member_epoch = 0;
    std::optional<std::string> instance_id;
    std::optional<std::string> rack_id;
    std::int32_t rebalance_timeout_ms = -1;
    std::optional<std::vector<topic_name>> subscribed_topic_names;
    /// A client-supplied RE2 pattern; the backend compiles it once, never under a lock that
    /// other groups wait for.
    std::optional<std::string> subscribed_topic_regex;
    std::optional<std::string> server_assignor;
    std::optional<std::vector<owned_partitions>> topic_partitions;
    client_info client;
};

struct consumer_heartbeat_result {
    backend_error error;  // with the message for the client (ErrorMessage), if any
    std::string member_id;
    std::int32_t member_epoch = 0;
    std::int32_t heartbeat_interval_ms = 0;
    std::optional<std::vector<owned_partitions>> assignment;
};

// --- offsets ---------------------------------------------------------------------------------

struct commit_partition {
    partition_id partition;
    offset committed{-1};
    std::int32_t leader_epoch = -1;
    std::optional<std::string> metadata;
};

struct commit_topic {
    topic_name topic;
    std::vector<commit_partition> partitions;
};

struct offset_commit_request {
    sluice::group_id group_id;
    std::int32_t generation_id_or_member_epoch = -1;
    std::string member_id;
    std::optional<std::string> group_instance_id;
    std::int64_t retention_time_ms = -1;  // OffsetCommit v2-4; -1 = the backend's default
    /// The OffsetCommit version (membership rules differ by version); -1 for fronts that are
    /// not Kafka (they commit as the newest version does).
    std::int16_t api_version = -1;
    std::vector<commit_topic> topics;
};

struct commit_partition_result {
    partition_id partition;
    backend_error error;
};

struct commit_topic_result {
    topic_name topic;
    std::vector<commit_partition_result> partitions;
};

struct offset_commit_result {
    std::vector<commit_topic_result> topics;
};

struct topic_partition_list {
    topic_name topic;
    std::vector<partition_id> partitions;
};

struct offset_fetch_request {
    sluice::group_id group_id;
    std::optional<std::string> member_id;                     // OffsetFetch v9+
    std::int32_t member_epoch = -1;                           // OffsetFetch v9+
    std::optional<std::vector<topic_partition_list>> topics;  // null: every committed one
    bool require_stable = false;
};

struct fetched_offset {
    partition_id partition;
    offset committed{-1};
    std::int32_t leader_epoch = -1;
    std::optional<std::string> metadata;
    backend_error error;
};

struct fetched_offsets_topic {
    topic_name topic;
    std::vector<fetched_offset> partitions;
};

struct offset_fetch_result {
    sluice::group_id group_id;
    backend_error error;  // group-level
    std::vector<fetched_offsets_topic> topics;
};

struct offset_delete_result {
    backend_error error;  // group-level
    std::vector<commit_topic_result> topics;
};

// --- admin and observation -------------------------------------------------------------------

struct group_deletion {
    sluice::group_id group_id;
    backend_error error;
};

struct listed_group {
    sluice::group_id group_id;
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
    backend_error error;
    sluice::group_id group_id;
    std::string state;
    std::string protocol_type;
    std::string protocol_data;  // the selected protocol (Stable)
    std::vector<described_member> members;
};

/// Topic id -> partitions, as KIP-848 assignments name them.
using topic_partitions = std::map<uuid, std::set<partition_id>>;

struct consumer_member_description {
    std::string member_id;
    std::optional<std::string> instance_id;
    std::optional<std::string> rack_id;
    std::int32_t member_epoch = 0;
    std::string client_id;
    std::string client_host;
    std::vector<topic_name> subscribed_topic_names;
    std::optional<std::string> subscribed_topic_regex;
    topic_partitions assignment;
    topic_partitions target_assignment;
};

struct consumer_group_description {
    backend_error error;  // with the message for the client (ErrorMessage), if any
    sluice::group_id group_id;
    std::string state;
    std::int32_t group_epoch = 0;
    std::int32_t assignment_epoch = 0;
    std::string assignor_name;
    std::vector<consumer_member_description> members;
};

/// A group as an operator sees it: members, assignments, committed offsets and lag.
struct group_view {
    struct member {
        std::string member_id;
        std::optional<std::string> instance_id;
        std::string client_id;
        std::string client_host;
        /// Topic -> partitions; empty when the assignment is not known (a non-consumer
        /// protocol, or a classic group that is rebalancing).
        std::map<topic_name, std::vector<partition_id>> assignment;
    };
    struct partition {
        topic_name topic;
        partition_id partition;
        offset committed{-1};
        offset log_end{-1};     // the high watermark; -1 when the partition no longer exists
        std::int64_t lag = -1;  // log_end - committed, or -1 when unknown
        /// With lag > 0: the timestamp (ms) of the oldest record not consumed (of its batch:
        /// to within one batch); -1 when unknown or when there is no lag.
        std::int64_t oldest_unconsumed_timestamp = -1;
        /// The partition's retention.ms (-1: kept forever; also -1 when unknown).
        std::int64_t retention_ms = -1;
        std::optional<std::string> metadata;
    };
    sluice::group_id group_id;
    std::string type;
    std::string state;
    std::string protocol_type;
    std::string protocol;
    std::int32_t generation = 0;  // classic generation or consumer group epoch
    std::vector<member> members;
    std::vector<partition> offsets;
};

struct group_counters {
    std::uint64_t rebalances = 0;      // rebalances completed since start
    std::uint64_t offset_commits = 0;  // offsets committed since start
};

/// Consumer groups and their committed offsets.
///
/// Every call is answered; calls that park (JoinGroup and SyncGroup until the rebalance
/// barrier completes) are answered at the latest when the backend stops. An offset commit,
/// a group deletion and an offset deletion are answered once they are durable.
/// Concurrency: every method may be called from any thread; work on one group never waits for
/// another group. Awaitables resume on the caller's executor.
class groups {
  public:
    virtual ~groups() = default;

    /// False while groups and committed offsets are being replayed (calls then fail with
    /// coordinator_loading).
    virtual bool loaded() const = 0;

    virtual awaitable<join_group_result> join_group(join_group_request req) = 0;
    virtual awaitable<sync_group_result> sync_group(sync_group_request req) = 0;
    virtual awaitable<backend_result<void>> heartbeat(heartbeat_request req) = 0;
    virtual awaitable<leave_group_result> leave_group(group_id group,
                                                      std::vector<leave_member> members) = 0;
    virtual awaitable<consumer_heartbeat_result> consumer_heartbeat(
        consumer_heartbeat_request req) = 0;

    virtual awaitable<offset_commit_result> commit_offsets(offset_commit_request req) = 0;
    /// One answer per request, in order.
    virtual awaitable<std::vector<offset_fetch_result>> fetch_offsets(
        std::vector<offset_fetch_request> reqs) = 0;
    virtual awaitable<offset_delete_result> delete_offsets(
        group_id group, std::vector<topic_partition_list> topics) = 0;

    virtual awaitable<std::vector<group_deletion>> delete_groups(std::vector<group_id> ids) = 0;
    /// Filters as ListGroups has them (state names case-insensitive; types "classic",
    /// "consumer"); empty filters match everything.
    virtual awaitable<std::vector<listed_group>> list_groups(std::vector<std::string> states,
                                                             std::vector<std::string> types) = 0;
    virtual awaitable<std::vector<described_group>> describe_groups(std::vector<group_id> ids) = 0;
    virtual awaitable<std::vector<consumer_group_description>> describe_consumer_groups(
        std::vector<group_id> ids) = 0;

    /// Snapshots without waiting for anything (/metrics, the HTTP views): every group, or one.
    virtual std::vector<group_view> view_groups() = 0;
    virtual std::optional<group_view> view_group(const group_id& id) = 0;
    virtual group_counters counters() const = 0;

    /// A group's own configs (Kafka's GroupConfig, KIP-848): consumer.session.timeout.ms and
    /// consumer.heartbeat.interval.ms, each within the broker's group.consumer.min/max bounds
    /// and the session longer than the heartbeat. `configs` replaces the group's set (empty:
    /// the group follows the broker's settings); the group need not exist. Unless validate_only
    /// the group's next heartbeats use them. Errors: invalid_config (the message says why).
    /// The caller persists them and sets them again after a restart.
    virtual backend_result<void> set_group_configs(const group_id& group,
                                                 std::map<std::string, std::string> configs,
                                                 bool validate_only) = 0;
    /// Every group config with its value and source (the group's own, else the broker's).
    virtual std::vector<config_entry> describe_group_configs(const group_id& group) const = 0;
};

}  // namespace sluice::backend::api
