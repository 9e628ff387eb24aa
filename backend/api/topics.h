// The topics interface of a backend (owned by backend/api): which topics exist, their
// partitions and configurations, and the administration every front needs (create, delete,
// grow, reconfigure). Topic administration may do blocking work in the backend (files, a
// network round trip); every call is awaitable and never blocks the caller's thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backend/api/common.h"
#include "backend/api/configs.h"
#include "protocol/core/ids.h"
#include "protocol/core/uuid.h"

namespace sluice::backend::api {

struct topic_description {
    topic_name name;
    uuid id;
    std::int32_t partitions = 0;
    /// A topic of the backend's own state (__consumer_offsets, ...): readable, not writable.
    bool internal = false;
    /// The configs the topic sets itself (the rest come from defaults).
    std::map<std::string, std::string> overrides;
};

struct new_topic {
    topic_name name;
    std::int32_t partitions = 1;
    std::map<std::string, std::string> configs;
    /// Check everything, create nothing.
    bool validate_only = false;
};

/// A read-only setting of the broker (or backend) as DescribeConfigs shows it: the value
/// `properties` gives it (source static_broker), else `default_value` (source default_config).
config_entry static_config_entry(std::string name, std::string default_value, config_type type,
                                 std::string documentation,
                                 const std::map<std::string, std::string>& properties);

/// One change of IncrementalAlterConfigs (Kafka's operation names).
struct config_change {
    enum class op : std::int8_t { set = 0, remove = 1, append = 2, subtract = 3 };
    std::string name;
    op operation = op::set;
    std::optional<std::string> value;  // required by set, append and subtract
};

struct created_topic {
    topic_description topic;
    std::vector<config_entry> configs;  // every config of the new topic, as describe_configs
};

/// Where a partition stands, and what it holds.
struct partition_state {
    topic_name topic;
    partition_id partition;
    offset log_start_offset{0};
    offset high_watermark{0};
    offset log_end_offset{0};
    std::int32_t leader_epoch = 0;
    std::int64_t size_bytes = 0;
    /// Traffic since start (every front): record batch bytes and records appended by
    /// producers, record batch bytes and records (whole batches) returned to readers.
    std::uint64_t bytes_in = 0;
    std::uint64_t records_in = 0;
    std::uint64_t bytes_out = 0;
    std::uint64_t records_out = 0;
};

/// The storage a backend keeps its partitions in (DescribeLogDirs).
struct storage_description {
    std::string path;
    std::int64_t total_bytes = -1;
    std::int64_t usable_bytes = -1;
    std::vector<partition_state> partitions;
};

/// Topics and their administration.
///
/// Concurrency: every method may be called from any thread; awaitables resume on the
/// caller's executor. Lookups see a topic once its creation has completed.
class topics {
  public:
    virtual ~topics() = default;

    virtual awaitable<std::optional<topic_description>> describe(topic_name name) = 0;
    virtual awaitable<std::optional<topic_description>> describe(uuid id) = 0;
    /// Every topic, internal ones included, sorted by name.
    virtual awaitable<std::vector<topic_description>> list() = 0;

    /// Errors: invalid_topic_name, topic_already_exists, invalid_partitions, invalid_config.
    /// Also answers validate_only calls with what the topic would be.
    virtual awaitable<backend_result<created_topic>> create(new_topic spec) = 0;
    /// Errors: unknown_topic_or_partition, policy_violation (internal topics).
    virtual awaitable<backend_result<void>> remove(topic_name name) = 0;
    /// Raises the partition count to `total`. Errors: unknown_topic_or_partition,
    /// invalid_partitions (not an increase).
    virtual awaitable<backend_result<void>> create_partitions(topic_name name, std::int32_t total,
                                                            bool validate_only) = 0;

    /// Every config of a topic (overrides, backend defaults, built-in defaults).
    virtual awaitable<backend_result<std::vector<config_entry>>> describe_configs(
        topic_name name) = 0;
    /// Replaces the topic's overrides with exactly `configs` (Kafka's AlterConfigs).
    virtual awaitable<backend_result<void>> replace_configs(
        topic_name name, std::map<std::string, std::string> configs, bool validate_only) = 0;
    /// Applies `changes` to the topic's overrides (Kafka's IncrementalAlterConfigs).
    virtual awaitable<backend_result<void>> alter_configs(topic_name name,
                                                        std::vector<config_change> changes,
                                                        bool validate_only) = 0;
    /// The backend's own settings that an administrator may ask about (defaults of topic
    /// configs and the like), as broker configs: the dynamic ones (dynamic_config_names) with
    /// their source and synonyms over the dynamic broker configs in force, the rest read-only.
    virtual std::vector<config_entry> backend_configs() const = 0;
    /// The broker configs (Kafka's names) the backend takes as dynamic broker configs: the
    /// broker-level defaults of topic configs (log.retention.ms, message.max.bytes, ...).
    virtual std::vector<std::string> dynamic_config_names() const = 0;
    /// Checks `configs` (every name one of dynamic_config_names()) and, unless validate_only,
    /// records them as the dynamic broker configs (what backend_configs and describe_configs
    /// report from then on). Errors: invalid_config (a bad value; the message names it).
    /// Cheap and synchronous, so that a caller may keep its own lock around it and the file it
    /// persists the configs in; the caller hands them back after a restart.
    virtual backend_result<void> set_dynamic_configs(dynamic_broker_configs configs,
                                                   bool validate_only) = 0;
    /// Puts the recorded dynamic configs in force: topics that do not override a config follow
    /// the new value once this completes. Calls may overlap; the last recorded configs win.
    virtual awaitable<void> apply_dynamic_configs() = 0;

    /// A snapshot of every partition's offsets, size and traffic, without waiting for
    /// anything (for /metrics and listings; the values may be slightly stale).
    virtual std::vector<partition_state> partition_states() const = 0;
    /// The storage with the partitions of `topics` (every topic when empty).
    virtual awaitable<storage_description> describe_storage(std::vector<topic_name> topics) = 0;
};

}  // namespace sluice::backend::api
