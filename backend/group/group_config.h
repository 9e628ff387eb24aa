// The group coordinator's settings and clock (owned by backend/group), shared by its parts.
// Plain values; the start-up code fills coordinator_config from the server's configuration.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace sluice::backend::group {

/// Settings, with Kafka's names and defaults.
struct coordinator_config {
    std::int32_t min_session_timeout_ms = 6000;        // group.min.session.timeout.ms
    std::int32_t max_session_timeout_ms = 1800000;     // group.max.session.timeout.ms
    std::int32_t initial_rebalance_delay_ms = 3000;    // group.initial.rebalance.delay.ms
    std::int32_t max_size = 2147483647;                // group.max.size
    std::int32_t new_member_join_timeout_ms = 300000;  // group.classic.new.member.join.timeout.ms
    std::int64_t offsets_retention_ms = 10080LL * 60000;  // offsets.retention.minutes
    // offsets.retention.check.interval.ms
    std::int64_t offsets_retention_check_interval_ms = 600000;
    std::int32_t offset_metadata_max_bytes = 4096;         // offset.metadata.max.bytes
    std::int32_t offsets_topic_partitions = 1;             // offsets.topic.num.partitions
    std::int32_t offsets_topic_segment_bytes = 104857600;  // offsets.topic.segment.bytes
    std::int32_t consumer_heartbeat_interval_ms = 5000;    // group.consumer.heartbeat.interval.ms
    std::int32_t consumer_session_timeout_ms = 45000;      // group.consumer.session.timeout.ms
    // The bounds of a group's own consumer.session.timeout.ms and consumer.heartbeat.interval.ms
    // (group configs, KIP-848).
    std::int32_t consumer_min_session_timeout_ms = 45000;  // group.consumer.min.session.timeout.ms
    std::int32_t consumer_max_session_timeout_ms = 60000;  // group.consumer.max.session.timeout.ms
    std::int32_t consumer_min_heartbeat_interval_ms = 5000;  // ...min.heartbeat.interval.ms
    std::int32_t consumer_max_heartbeat_interval_ms = 15000;  // ...max.heartbeat.interval.ms
    std::int32_t consumer_max_size = 2147483647;           // group.consumer.max.size
    std::vector<std::string> consumer_assignors = {"uniform", "range"};  // group.consumer.assignors
};

/// A group's own configs (Kafka's GroupConfig, set with IncrementalAlterConfigs on a GROUP
/// resource); an unset one follows the broker's setting.
struct group_overrides {
    std::optional<std::int32_t> session_timeout_ms;     // consumer.session.timeout.ms
    std::optional<std::int32_t> heartbeat_interval_ms;  // consumer.heartbeat.interval.ms
    bool empty() const { return !session_timeout_ms && !heartbeat_interval_ms; }
};

/// The groups' own configs, by group id. The front persists them and sets them again at
/// start. Concurrency: thread-safe (one mutex; reads copy a few integers).
class group_config_table {
public:
    group_overrides get(const std::string& group) const {
        std::lock_guard lock(mu_);
        auto it = table_.find(group);
        return it == table_.end() ? group_overrides{} : it->second;
    }
    /// Replaces the group's configs; empty ones remove the group from the table.
    void set(const std::string& group, group_overrides o) {
        std::lock_guard lock(mu_);
        if (o.empty()) {
            table_.erase(group);
        } else {
            table_[group] = o;
        }
    }
    /// The session timeout and heartbeat interval a KIP-848 group runs with.
    std::int32_t session_timeout_ms(const std::string& group,
                                    const coordinator_config& cfg) const;
    std::int32_t heartbeat_interval_ms(const std::string& group,
                                       const coordinator_config& cfg) const;

private:
    mutable std::mutex mu_;
    std::map<std::string, group_overrides> table_;
};

inline std::int32_t group_config_table::session_timeout_ms(const std::string& group,
                                                           const coordinator_config& cfg) const {
    return get(group).session_timeout_ms.value_or(cfg.consumer_session_timeout_ms);
}

inline std::int32_t group_config_table::heartbeat_interval_ms(
    const std::string& group, const coordinator_config& cfg) const {
    return get(group).heartbeat_interval_ms.value_or(cfg.consumer_heartbeat_interval_ms);
}

/// Milliseconds: `wall` since the Unix epoch (commit timestamps), `mono` for timeouts.
struct coordinator_clock {
    std::function<std::int64_t()> wall;
    std::function<std::int64_t()> mono;
    static coordinator_clock system();
};

/// The internal topic the coordinator keeps its state in.
inline constexpr const char* offsets_topic_name = "__consumer_offsets";

}  // namespace sluice::backend::group
