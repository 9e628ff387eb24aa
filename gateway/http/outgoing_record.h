// A record as the HTTP fronts hand it to the producer (owned by gateway/http): what a REST or
// WebSocket client sent, decoded. Plain values, apart from record_producer.h so that the code
// that reads request bodies needs nothing of the server.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sluice::gateway {

/// One record to produce: bytes (already decoded from base64 or serialized JSON).
struct outgoing_record {
    std::optional<std::string> key;
    std::optional<std::string> value;
    std::vector<std::pair<std::string, std::optional<std::string>>> headers;
    /// The partition the client asked for; otherwise chosen from the key.
    std::optional<std::int32_t> partition;
    /// Milliseconds since the epoch; -1: now.
    std::int64_t timestamp = -1;
};

}  // namespace sluice::gateway
