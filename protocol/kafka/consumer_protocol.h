// The embedded "consumer" protocol of classic consumer groups (owned by protocol/kafka): the
// bytes a Kafka consumer puts in JoinGroup metadata (its subscription) and the leader puts in
// SyncGroup assignments. sluice's server-side members (REST consumer instances, WebSocket and
// SSE subscriptions with a group) speak it so that they share a group with Kafka consumers:
// either side may be the leader and assign partitions to the other.
//
//   subscription: int16 version, int32 count x string topic, bytes user_data (int32 length,
//                 -1 = null), v1+: int32 count x {string topic, int32 count x int32 partition}
//                 owned partitions, v2+: int32 generation, v3+: nullable string rack
//   assignment:   int16 version, int32 count x {string topic, int32 count x int32 partition},
//                 bytes user_data
// Strings are int16-length-prefixed. Decoding reads the fields of the versions it knows and
// ignores what a newer version appends; malformed bytes give an error, never an assert.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/core/bytes.h"
#include "protocol/core/result.h"

namespace sluice::protocol::kafka {

/// The protocol type of consumers in classic groups.
inline constexpr const char* consumer_protocol_type = "consumer";

/// Topic -> partitions, sorted.
using topic_assignment = std::map<std::string, std::vector<std::int32_t>>;

struct consumer_subscription {
    std::int16_t version = 0;
    std::vector<std::string> topics;
    std::optional<std::string> user_data;
    topic_assignment owned_partitions;  // v1+
    std::int32_t generation = -1;       // v2+
    std::optional<std::string> rack;    // v3+
};

struct consumer_assignment {
    std::int16_t version = 0;
    topic_assignment partitions;
    std::optional<std::string> user_data;
};

/// Encodes at `s.version` (0 to 3).
byte_buffer encode_subscription(const consumer_subscription& s);
result<consumer_subscription> decode_subscription(bytes_view data);

byte_buffer encode_assignment(const consumer_assignment& a);
result<consumer_assignment> decode_assignment(bytes_view data);

}  // namespace sluice::protocol::kafka
