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

}  // namespace sluice::gateway
