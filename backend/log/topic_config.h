// Per-topic configuration of the native log, with Kafka's names, types and defaults
// (owned by backend/log). A topic stores only its overrides; the effective config is the
// overrides applied over the broker-level defaults, so changing a broker default reaches every
// topic that did not override it.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/api/configs.h"
#include "protocol/core/result.h"

namespace sluice::backend::log {

enum class timestamp_type { create_time, log_append_time };

/// The effective configuration of one topic. Field comments name the Kafka key.
struct topic_config {
    static constexpr std::int64_t no_limit = std::numeric_limits<std::int64_t>::max();

    std::int32_t segment_bytes = 1073741824;        // segment.bytes
    std::int64_t segment_ms = 604800000;            // segment.ms (7 days)
    std::int64_t segment_jitter_ms = 0;             // segment.jitter.ms (stored, not applied)
    std::int32_t segment_index_bytes = 10485760;    // segment.index.bytes
    std::int64_t retention_ms = 604800000;          // retention.ms; -1 = keep forever
    std::int64_t retention_bytes = -1;              // retention.bytes; -1 = no size limit
    bool cleanup_delete = true;                     // cleanup.policy contains "delete"
    bool cleanup_compact = false;                   // cleanup.policy contains "compact"
    std::int64_t delete_retention_ms = 86400000;    // delete.retention.ms (tombstones)
    std::int64_t min_compaction_lag_ms = 0;         // min.compaction.lag.ms
    std::int64_t max_compaction_lag_ms = no_limit;  // max.compaction.lag.ms
    double min_cleanable_dirty_ratio = 0.5;         // min.cleanable.dirty.ratio
    std::int32_t max_message_bytes = 1048588;       // max.message.bytes
    timestamp_type message_timestamp_type = timestamp_type::create_time;  // message.timestamp.type
    std::int64_t message_timestamp_difference_max_ms = no_limit;          // (stored, not applied)
    std::int32_t index_interval_bytes = 4096;                             // index.interval.bytes
    std::int64_t flush_messages = no_limit;       // flush.messages (stored, see durability.md)
    std::int64_t flush_ms = no_limit;             // flush.ms (stored, see durability.md)
    std::int64_t file_delete_delay_ms = 60000;    // file.delete.delay.ms (stored)
    std::string compression_type = "producer";    // compression.type (only "producer" acts)
    bool message_downconversion_enable = true;    // message.downconversion.enable (stored)
    std::int32_t min_insync_replicas = 1;         // min.insync.replicas (single node: stored)
    bool preallocate = false;                     // preallocate (stored)
    bool unclean_leader_election_enable = false;  // unclean.leader.election.enable (stored)
    // message.format.version: compat: Kafka 3.x accepted and ignored it (every batch is magic
    // 2); clients that still send it get it stored and reported, and nothing else happens.
    std::string message_format_version = "3.0-IV1";

    /// The effective config: `defaults` with `overrides` applied. Unknown keys and bad values
    /// fail with errc::invalid_config; `error` (when given) then names the key and the reason.
    static result<topic_config> from_overrides(const std::map<std::string, std::string>& overrides,
                                               const topic_config& defaults,
                                               std::string* error = nullptr);

    /// Every config as Kafka prints it (numbers in decimal, cleanup.policy as "delete",
    /// "compact" or "compact,delete", booleans as "true"/"false").
    std::map<std::string, std::string> to_map() const;
    /// One config as Kafka prints it; nullopt for an unknown name.
    std::optional<std::string> get(std::string_view name) const;

    bool operator==(const topic_config&) const = default;
};

/// Kafka's ConfigType numbering (DescribeConfigs v3+): the interface's own enum.
using config_type = api::config_type;

/// One row of the topic config table, for DescribeConfigs and documentation.
struct config_def {
    std::string_view name;  // the topic-level key
    config_type type;
    std::string_view default_value;  // Kafka's built-in default, as printed
    std::string_view documentation;  // one line
    std::string_view broker_key;     // the broker property holding the default ("" = none)
};

/// Every topic config this log understands, sorted by name.
const std::vector<config_def>& topic_config_defs();
/// The row for `name`, or nullptr.
const config_def* find_topic_config_def(std::string_view name);

/// Broker-level defaults from the broker's properties (log.segment.bytes, log.retention.ms,
/// log.retention.minutes, log.retention.hours, log.retention.bytes, log.cleanup.policy,
/// message.max.bytes, log.message.timestamp.type, log.roll.ms/hours, ...). Keys that are not
/// log settings are ignored; a bad value of a known key fails with errc::invalid_config.
result<topic_config> broker_defaults(const std::map<std::string, std::string>& props,
                                     std::string* error = nullptr);
/// Every broker property broker_defaults() reads.
std::vector<std::string_view> broker_default_keys();

/// Kafka's synonyms of a broker property, the most precise first (log.retention.ms,
/// log.retention.minutes, log.retention.hours; log.roll.ms, log.roll.hours; ...); `key` alone
/// for a property without synonyms.
std::vector<std::string_view> broker_config_synonyms(std::string_view key);

/// Puts `over` onto `props` as Kafka layers dynamic broker configs over the static ones
/// (DynamicBrokerConfig.overrideProps): each key of `over` first removes its synonyms from
/// `props`, so a dynamic log.retention.hours wins over a static log.retention.ms.
void override_broker_properties(std::map<std::string, std::string>& props,
                                const std::map<std::string, std::string>& over);

}  // namespace sluice::backend::log
