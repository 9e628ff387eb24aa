// The group coordinator's settings and clock (owned by backend/group), shared by its parts.
// Plain values; the start-up code fills coordinator_config from the server's configuration.
#pragma once

#include <cstdint>
#include <functional>
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
    std::int32_t consumer_max_size = 2147483647;           // group.consumer.max.size
    std::vector<std::string> consumer_assignors = {"uniform", "range"};  // group.consumer.assignors
};

/// Milliseconds: `wall` since the Unix epoch (commit timestamps), `mono` for timeouts.
struct coordinator_clock {
    std::function<std::int64_t()> wall;
    std::function<std::int64_t()> mono;
    static coordinator_clock system();
};

/// The internal topic the coordinator keeps its state in.
inline constexpr const char* offsets_topic_name = "__consumer_offsets";

}  // namespace sluice::backend::group
