// The client level of the backend interface (owned by backend/api): what a Kafka client does
// with a cluster. A producer of records, a consumer (partitions assigned by hand, or a member
// of a consumer group with assignment and revocation callbacks and commits; seek, poll with a
// byte and time bound), admin (topics, partitions, configs, groups, offsets, lag,
// DeleteRecords) and the cluster's topology (brokers, leaders, controller, cluster id).
//
//   fronts:   http (REST v2/v3, console)   ws / sse          kafka front (broker level)
//                       \                    |
//   api:        client: producer   consumer   admin           topics records groups ...
//                       |                                       |
//   backends:   backend/client (over the broker level) --> native (backend/native)
//               backend/upstream (librdkafka)          --> a Kafka cluster
//
// The HTTP, WebSocket and SSE fronts stand on this level only, so that they run the same over
// the embedded log and over a Kafka cluster. The native backend's client level
// (backend/client) is written over the broker-level interfaces (topics, records, groups) and
// costs nothing on their hot paths; backend/upstream implements it with librdkafka.
//
// Calls may come from any thread and resume on the caller's executor. Every call that goes to
// a remote cluster has a deadline and fails with request_timed_out or backend_unavailable
// instead of hanging.
#pragma once

#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "backend/api/acls.h"
#include "backend/api/common.h"
#include "backend/api/configs.h"
#include "backend/api/groups.h"
#include "backend/api/outgoing_record.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"
#include "protocol/core/ids.h"
#include "protocol/kafka/record.h"

namespace sluice::backend::api {

struct topic_partition {
    topic_name topic;
    partition_id partition{0};
    auto operator<=>(const topic_partition&) const = default;
    bool operator==(const topic_partition&) const = default;
};

// --- topology --------------------------------------------------------------------------------

struct broker_info {
    std::int32_t node_id = -1;
    std::string host;
    std::int32_t port = -1;
    std::optional<std::string> rack;
};

struct cluster_info {
    std::string cluster_id;
    std::int32_t controller_id = -1;
    std::vector<broker_info> brokers;  // sorted by node id
};

struct partition_info {
    partition_id partition{0};
    std::int32_t leader = -1;  // -1: no leader right now
    std::vector<std::int32_t> replicas;
    std::vector<std::int32_t> isr;
};

struct topic_info {
    topic_name name;
    uuid id;  // zero when the cluster does not say
    bool internal = false;
    std::vector<partition_info> partitions;  // by partition id
};

/// The size of one replica's log as its broker reports it (DescribeLogDirs, summed over the
/// broker's log dirs; a replica being moved between dirs counts once, the current one).
struct replica_log_size {
    topic_name topic;
    partition_id partition{0};
    std::int32_t node_id = -1;
    std::int64_t size_bytes = 0;
};

/// A broker whose log sizes are unknown, and why (one line: no answer within the deadline,
/// CLUSTER_AUTHORIZATION_FAILED, the broker does not offer DescribeLogDirs, ...).
struct log_dirs_failure {
    std::int32_t node_id = -1;
    std::string reason;
};

/// Every broker's replica sizes: what was read, and the brokers that did not answer.
struct log_sizes {
    std::vector<replica_log_size> replicas;  // by topic, partition, node
    std::vector<log_dirs_failure> failures;  // by node id
};

/// Reads the log sizes of the brokers named, each by DescribeLogDirs (for a client level
/// whose library has no call for it: backend/upstream, handed one by the start-up file).
/// Bounded: a broker that does not answer within the reader's deadline is a failure.
class log_dirs_reader {
  public:
    virtual ~log_dirs_reader() = default;
    virtual awaitable<log_sizes> read(std::vector<broker_info> brokers) = 0;
};

// --- producer --------------------------------------------------------------------------------

/// What became of one record, in the order of the call.
struct delivery {
    backend_error error;  // empty: stored
    std::int32_t partition = -1;
    std::int64_t offset = -1;
    std::int64_t timestamp = -1;  // as stored (LogAppendTime when the topic uses it)
};

struct send_options {
    api::acks acks = api::acks::all;
    /// The whole call's deadline; records not acknowledged by then fail with
    /// request_timed_out.
    std::chrono::milliseconds timeout{30000};
};

/// Produces records: idempotent (no duplicates from retries, order kept per partition), and
/// acks=all unless the call asks otherwise. Shared by every front; thread-safe.
class producer {
  public:
    virtual ~producer() = default;

    /// Sends `records` to one topic and answers each record's fate. The call itself fails,
    /// sending nothing, with unknown_topic_or_partition when the topic does not exist (the
    /// message names it) or when a record names a partition the topic lacks (the message
    /// names the partition). A record the cluster refuses fails alone (message_too_large,
    /// invalid_record, ...), as do records not acknowledged by the deadline.
    virtual awaitable<backend_result<std::vector<delivery>>> send(
        topic_name topic, std::vector<outgoing_record> records, send_options opts) = 0;

    /// The topic's partition count from the producer's metadata (cheap: cached, refreshed on
    /// a miss). Errors: unknown_topic_or_partition.
    virtual awaitable<backend_result<std::int32_t>> partitions(topic_name topic) = 0;
};

/// A transactional producer of its own transactional.id (Kafka's transactions): init()
/// takes the id over, fencing any earlier producer of the same id (its open transaction is
/// aborted and its later writes are refused by the cluster with producer_fenced);
/// send_committed() writes records to one topic in one transaction and commits it.
/// Lifecycle: made by client::open_transactional_producer; init() once before any send.
/// Concurrency: one call at a time (the caller serialises); calls resume on the caller's
/// executor.
class transactional_producer {
  public:
    virtual ~transactional_producer() = default;

    /// Errors: producer_fenced (a newer producer of the id exists), request_timed_out, the
    /// remote ones.
    virtual awaitable<backend_result<void>> init(std::chrono::milliseconds timeout) = 0;
    /// One transaction: every record stored and committed, or none (the transaction is
    /// aborted). Errors: producer_fenced (fatal: the producer is of no further use; every later
    /// call fails so), request_timed_out, and the remote ones (retryable: the transaction was
    /// aborted).
    virtual awaitable<backend_result<void>> send_committed(
        topic_name topic, std::vector<outgoing_record> records,
        std::chrono::milliseconds timeout) = 0;
};

// --- consumer --------------------------------------------------------------------------------

enum class offset_reset : std::int8_t { earliest, latest, none };

struct consumer_options {
    /// A member of this consumer group (subscribe) and where commits go. Without a group the
    /// consumer reads partitions assigned by hand and cannot commit.
    std::optional<sluice::group_id> group;
    /// Static membership (group.instance.id): a member that comes back under the same id
    /// keeps its partitions without a rebalance.
    std::optional<std::string> instance_id;
    std::int32_t session_timeout_ms = 30000;
    /// Where a partition without a committed offset (and without a seek) starts, and where
    /// an out-of-range position goes. `none`: the partition's poll outcome carries
    /// offset_out_of_range and the owner must seek.
    offset_reset reset = offset_reset::latest;
    api::isolation isolation = api::isolation::read_uncommitted;
    client_info client;
};

/// What a consumer holds now.
struct assignment_state {
    /// False while its group rebalances (the partitions then belong to no one); always true
    /// for a consumer without a group.
    bool stable = true;
    std::int32_t generation = -1;  // the group's generation (-1: no group)
    std::string member_id;
    std::vector<topic_partition> partitions;  // sorted
    /// The subscription the assignment was computed for (resolved topic names).
    std::vector<topic_name> topics;
};

struct poll_limits {
    std::chrono::milliseconds max_wait{0};  // park up to this long for min_bytes
    std::int32_t min_bytes = 1;
    std::int64_t max_bytes = 1024 * 1024;
    std::int32_t partition_max_bytes = 1024 * 1024;
};

/// Gets each record with its topic and partition, in offset order per partition; returns
/// false to stop before it (the record is not consumed: the next poll starts at it).
using message_sink =
    std::function<bool(const topic_name&, partition_id, const protocol::kafka::record_view&)>;

/// How one partition of a poll went.
struct polled_partition {
    topic_partition tp;
    backend_error error;  // offset_out_of_range (reset none), unknown_topic_or_partition, ...
    offset next{0};       // the position after the last record handed to the sink
    offset high_watermark{-1};
    offset log_start{-1};
};

/// A commit of one partition: `offset` is the next record to read (Kafka's committed offset).
struct offset_commit {
    topic_partition tp;
    offset next{0};
    std::optional<std::string> metadata;
};

struct committed_offset {
    topic_partition tp;
    offset next{-1};  // -1: nothing committed
    std::optional<std::string> metadata;
};

/// Which topics a pattern subscription may match (those the subscriber may DESCRIBE). Null:
/// every topic.
using topic_filter = std::function<bool(const topic_name&)>;

/// A Kafka consumer: assign or subscribe, seek, poll, commit. Positions start at the group's
/// committed offset, else where `reset` says, and advance with every record handed out.
///
/// Lifecycle: made by client::open_consumer; close() ends it (leaving the group, or not:
/// a static member kept across a restart does not leave); closed() tells when its background
/// work has finished. The owner keeps it alive until then.
/// Concurrency: poll, seek, commit and committed are called from the owner's executor, one at
/// a time; subscribe, assign, assignment, positions and close from any thread. Callbacks run
/// on the consumer's own executor.
class consumer {
  public:
    virtual ~consumer() = default;

    // --- what it reads --------------------------------------------------------------------
    /// Subscribes (with a group) to these topics, replacing the subscription; the member
    /// rejoins.
    virtual void subscribe(std::vector<topic_name> topics) = 0;
    /// Subscribes to every topic whose whole name matches the RE2 pattern and that `filter`
    /// lets through, checked again as topics come and go. False when the pattern does not
    /// compile.
    virtual bool subscribe_pattern(const std::string& pattern, topic_filter filter) = 0;
    virtual void unsubscribe() = 0;
    /// The subscription as given: topics, or the pattern.
    virtual std::vector<topic_name> subscribed_topics() const = 0;
    virtual std::optional<std::string> subscribed_pattern() const = 0;
    /// Reads exactly these partitions (replacing any assignment; without group management).
    virtual void assign(std::vector<topic_partition> parts) = 0;
    virtual assignment_state assignment() const = 0;

    /// Called (on the consumer's executor) whenever assignment() changes: an assignment, the
    /// start of a rebalance, close.
    virtual void on_change(std::function<void()> fn) = 0;
    /// Called before the member gives partitions up (rebalance, new subscription, close),
    /// while its generation is still valid: where the owner commits what it consumed.
    using revoke_hook = std::function<awaitable<void>(const assignment_state& held)>;
    virtual void on_revoke(revoke_hook hook) = 0;

    // --- positions ------------------------------------------------------------------------
    /// Sets the next offset to read of held partitions.
    virtual void seek(std::vector<std::pair<topic_partition, offset>> to) = 0;
    /// Seeks to earliest, latest or the first record at or after a timestamp (offset_spec's
    /// earliest, latest, timestamp). Errors: unknown_topic_or_partition, request_timed_out.
    virtual awaitable<backend_result<void>> seek_to(std::vector<topic_partition> parts,
                                                    offset_spec spec) = 0;
    /// The next offset to read of every held partition whose position is known.
    virtual std::map<topic_partition, offset> positions() const = 0;

    // --- reading --------------------------------------------------------------------------
    /// Hands the records available now (or within limits.max_wait) of the held partitions to
    /// `sink`, resolving positions first (committed, else reset). Answers one outcome per
    /// partition read. Call-level errors: the group's (not_coordinator, group_authorization...)
    /// and the remote ones (backend_unavailable, request_timed_out).
    virtual awaitable<backend_result<std::vector<polled_partition>>> poll(
        poll_limits limits, const message_sink& sink) = 0;

    // --- commits --------------------------------------------------------------------------
    /// Commits `offsets`, or with nullopt the position of every held partition; answers what
    /// was committed. Errors: no group (invalid_request), illegal_generation /
    /// rebalance_in_progress / unknown_member_id (the group moved on), the remote ones.
    virtual awaitable<backend_result<std::vector<offset_commit>>> commit(
        std::optional<std::vector<offset_commit>> offsets) = 0;
    /// The group's committed offsets of `parts` (of every held partition when empty).
    virtual awaitable<backend_result<std::vector<committed_offset>>> committed(
        std::vector<topic_partition> parts) = 0;

    // --- lifecycle ------------------------------------------------------------------------
    virtual void close(bool leave) = 0;
    virtual bool closed() const = 0;
};

// --- admin -----------------------------------------------------------------------------------

/// A consumer group as an operator sees it (members, committed offsets, lag): group_view.
/// Administration of topics, configs, groups and offsets, and the cluster's topology.
/// Thread-safe; every call has a deadline.
class admin {
  public:
    virtual ~admin() = default;

    // --- topology -------------------------------------------------------------------------
    virtual awaitable<backend_result<cluster_info>> describe_cluster() = 0;
    /// Every topic (internal ones included) with its partitions, sorted by name.
    virtual awaitable<backend_result<std::vector<topic_info>>> list_topics() = 0;
    /// Errors: unknown_topic_or_partition.
    virtual awaitable<backend_result<topic_info>> describe_topic(topic_name name) = 0;

    // --- topics and configs ---------------------------------------------------------------
    /// Errors: invalid_topic_name, topic_already_exists, invalid_partitions, invalid_config,
    /// policy_violation; validate_only checks without creating.
    virtual awaitable<backend_result<topic_info>> create_topic(new_topic spec) = 0;
    virtual awaitable<backend_result<void>> delete_topic(topic_name name) = 0;
    virtual awaitable<backend_result<void>> create_partitions(topic_name name,
                                                              std::int32_t total) = 0;
    virtual awaitable<backend_result<std::vector<config_entry>>> describe_topic_configs(
        topic_name name) = 0;
    virtual awaitable<backend_result<void>> alter_topic_configs(
        topic_name name, std::vector<config_change> changes, bool validate_only) = 0;
    /// A broker's configs (the native backend: its own settings).
    virtual awaitable<backend_result<std::vector<config_entry>>> describe_broker_configs(
        std::int32_t node_id) = 0;
    /// The cluster-wide dynamic broker configs (Kafka's BROKER resource ""): those set only.
    virtual awaitable<backend_result<std::vector<config_entry>>> describe_cluster_configs() = 0;
    /// IncrementalAlterConfigs on a broker's dynamic configs (`node_id`), or the cluster-wide
    /// defaults (nullopt); in force once it completes. Errors: invalid_config, invalid_request
    /// (a broker not in the cluster, a config that is not dynamic), unsupported.
    virtual awaitable<backend_result<void>> alter_broker_configs(
        std::optional<std::int32_t> node_id, std::vector<config_change> changes,
        bool validate_only) = 0;

    // --- offsets and records --------------------------------------------------------------
    virtual awaitable<std::vector<found_offset>> list_offsets(std::vector<offset_query> queries,
                                                              api::isolation isolation) = 0;
    virtual awaitable<std::vector<backend_result<offset>>> delete_records(
        std::vector<delete_records_request> reqs) = 0;

    // --- groups ---------------------------------------------------------------------------
    virtual awaitable<backend_result<std::vector<listed_group>>> list_groups() = 0;
    /// Members, assignments, committed offsets and lag. Errors: group_id_not_found.
    virtual awaitable<backend_result<group_view>> describe_group(group_id id) = 0;
    /// Errors: group_id_not_found, non_empty_group.
    virtual awaitable<backend_result<void>> delete_group(group_id id) = 0;
    /// The group's committed offsets (every committed partition when `parts` is empty).
    virtual awaitable<backend_result<std::vector<committed_offset>>> committed_offsets(
        group_id id, std::vector<topic_partition> parts) = 0;
    /// Sets a group's committed offsets from outside the group (the group must be empty).
    virtual awaitable<backend_result<void>> alter_committed_offsets(
        group_id id, std::vector<offset_commit> offsets) = 0;

    // --- storage --------------------------------------------------------------------------
    /// Every broker's replica sizes (DescribeLogDirs). A broker that does not answer or
    /// refuses is a failure in the answer, its replicas absent; the call fails only when the
    /// brokers cannot be listed (or unsupported: no way to ask them).
    virtual awaitable<backend_result<log_sizes>> describe_log_dirs() = 0;

    // --- ACLs (acls.h; errors: unsupported when the cluster has no authorizer, invalid_request,
    // backend_authorization_failed when the cluster refuses the gateway) ----------------------
    /// DescribeAcls: the bindings `filter` matches.
    virtual awaitable<backend_result<std::vector<acl_binding>>> describe_acls(
        acl_filter filter) = 0;
    /// CreateAcls: every binding stored, or the first one's error.
    virtual awaitable<backend_result<void>> create_acls(std::vector<acl_binding> bindings) = 0;
    /// DeleteAcls with one filter: the bindings it removed.
    virtual awaitable<backend_result<std::vector<acl_binding>>> delete_acls(acl_filter filter) = 0;
};

/// The client level of a backend: one producer, consumers on demand, admin.
class client {
  public:
    virtual ~client() = default;

    virtual api::producer& producer() = 0;
    /// A new consumer; `ex` runs its background work (group membership) and its callbacks.
    virtual std::shared_ptr<consumer> open_consumer(consumer_options opts,
                                                    boost::asio::any_io_executor ex) = 0;
    virtual api::admin& admin() = 0;
    /// A producer of its own with this transactional.id; null when the backend has none
    /// (the native client level).
    virtual std::unique_ptr<transactional_producer> open_transactional_producer(
        const std::string& transactional_id) {
        (void)transactional_id;
        return nullptr;
    }

    /// Whether the cluster can be reached now, and if not why (for /readyz); the native
    /// backend is always ready.
    struct health {
        bool ready = true;
        std::string reason;
    };
    virtual health check() const = 0;

    /// The process is stopping: waits on the cluster that can be given up (a metadata or
    /// admin answer from a cluster that is gone) end early with an error, so that the stop
    /// does not wait out request timeouts. Records already sent are still delivered or
    /// purged by the destructor. The native backend has nothing to give up.
    virtual void start_closing() {}

    /// What the client level reports on /metrics (upstream mode: librdkafka's statistics,
    /// refreshed every few seconds; the native backend reports nothing here).
    struct broker_stats {
        std::string name;   // host:port/node id as the client names it
        std::int32_t node_id = -1;
        std::string state;  // UP, DOWN, CONNECT, AUTH, ...
        std::int64_t requests_sent = 0;
        std::int64_t request_errors = 0;  // transmit, receive and request timeout errors
        std::int64_t rtt_avg_us = 0;
        std::int64_t rtt_p99_us = 0;
        std::int64_t throttle_avg_ms = 0;
    };
    struct stats {
        /// One entry per kind of librdkafka handle: "producer" (also admin and metadata),
        /// "consumers" (every consumer handle together).
        struct handle {
            std::string name;
            std::vector<broker_stats> brokers;
            std::int64_t queued_messages = 0;
        };
        std::vector<handle> handles;
        /// Calls that failed since start, by api errc name.
        std::map<std::string, std::int64_t> errors;
    };
    virtual stats statistics() const = 0;
};

}  // namespace sluice::backend::api
