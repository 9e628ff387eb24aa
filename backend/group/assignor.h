// Server-side partition assignors of the KIP-848 consumer group protocol (owned by
// backend/group): "uniform" (Kafka's default: balanced and sticky) and "range" (contiguous
// ranges per topic). Pure functions of the members' subscriptions, the topics' partition
// counts and the previous target assignment; not thread-safe state, none kept.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "protocol/core/uuid.h"

namespace sluice::backend::group {

/// Partitions by topic id.
using topic_partitions = std::map<uuid, std::set<std::int32_t>>;

struct assignor_member {
    std::string member_id;
    std::set<uuid> topics;          // subscribed topics that exist
    topic_partitions current;       // the previous target assignment (for stickiness)
};

/// Topic id -> partition count of every subscribed topic.
using topic_sizes = std::map<uuid, std::int32_t>;

/// Every partition of a subscribed topic goes to exactly one member subscribed to it. Uniform:
/// keeps previous owners where possible, then balances so that counts differ by at most one
/// among members with the same subscription.
std::map<std::string, topic_partitions> assign_uniform(const std::vector<assignor_member>& members,
                                                       const topic_sizes& topics);

/// Range: for each topic, the members subscribed to it (by member id) get contiguous ranges,
/// the first (partitions % members) one partition more.
std::map<std::string, topic_partitions> assign_range(const std::vector<assignor_member>& members,
                                                     const topic_sizes& topics);

/// The names the coordinator accepts in ConsumerGroupHeartbeat.ServerAssignor.
bool known_assignor(const std::string& name);

}  // namespace sluice::backend::group
