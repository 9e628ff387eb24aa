// Client-side partition assignors of classic consumer groups (owned by protocol/kafka): what
// the group leader runs over every member's subscription to fill SyncGroup. sluice's server-side
// members (REST consumer instances, WebSocket and SSE subscriptions) offer "range" and
// "roundrobin", the eager assignors Kafka consumers also offer by default, so that either
// kind of member can lead a mixed group. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/kafka/consumer_protocol.h"

namespace sluice::protocol::kafka {

struct assignor_member {
    std::string member_id;
    std::vector<std::string> topics;  // its subscription
};

/// Topic -> partition count, for every topic some member subscribes to that exists.
using partition_counts = std::map<std::string, std::int32_t>;

/// compat: org.apache.kafka.clients.consumer.RangeAssignor. Per topic, the members subscribed
/// to it, sorted by member id, get contiguous ranges; the first (partitions % members) get one
/// more. Every member appears in the answer, with an empty assignment if need be.
std::map<std::string, topic_assignment> assign_range(const std::vector<assignor_member>& members,
                                                     const partition_counts& counts);

/// compat: org.apache.kafka.clients.consumer.RoundRobinAssignor. Every topic-partition, sorted
/// by topic and partition, goes to the next member (sorted by id, circularly) subscribed to it.
std::map<std::string, topic_assignment> assign_roundrobin(
    const std::vector<assignor_member>& members, const partition_counts& counts);

}  // namespace sluice::protocol::kafka
