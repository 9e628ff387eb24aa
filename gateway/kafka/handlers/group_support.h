// Helpers shared by the consumer-group handlers (find_coordinator.cc, join_group.cc, ...):
// who the member is, as the group coordinator records it.
#pragma once

#include <string>
#include <vector>

#include "backend/api/groups.h"
#include "gateway/kafka/request_context.h"
#include "protocol/kafka/codec.h"

namespace sluice::gateway {

/// compat: Kafka records client_host as the peer address with a leading slash.
inline backend::api::client_info group_client(const request_context& ctx) {
    return {ctx.client_id(), "/" + ctx.connection().peer.address().to_string()};
}

inline std::vector<std::byte> to_vector(const protocol::kafka::bytes& b) {
    return {b.begin(), b.end()};
}

/// Without ACLs every group operation is allowed: bits of Kafka's AclOperation codes READ(3),
/// DELETE(6), DESCRIBE(8).
constexpr std::int32_t all_group_operations = (1 << 3) | (1 << 6) | (1 << 8);

}  // namespace sluice::gateway
