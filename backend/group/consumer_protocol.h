// The embedded "consumer" protocol that classic consumer groups carry as opaque bytes in
// JoinGroup metadata and SyncGroup assignments (owned by backend/group). The coordinator only
// reads them: the topics a group subscribes to (OffsetDelete, offset expiration) and the
// partitions each member was given (GET /v1/groups). Every version starts with the v0 fields:
//
//   subscription: int16 version, int32 count x string topic, int32-length nullable user_data,
//                 (v1+ owned partitions, v2+ generation, v3+ rack: not read)
//   assignment:   int16 version, int32 count x {string topic, int32 count x int32 partition},
//                 int32-length nullable user_data
//
// Bytes that do not parse give std::nullopt (the group is then "not known to subscribe").
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/core/bytes.h"

namespace sluice::backend::group {

/// The protocol type of Kafka consumers in classic groups.
inline constexpr const char* consumer_protocol_type = "consumer";

std::optional<std::vector<std::string>> parse_subscription_topics(protocol::bytes_view metadata);

std::optional<std::map<std::string, std::vector<std::int32_t>>> parse_assignment(
    protocol::bytes_view assignment);

}  // namespace sluice::backend::group
