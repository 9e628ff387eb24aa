// A record to produce through the client level (owned by backend/api; api::producer in
// client.h sends them). Plain values with no dependencies, so that code which only decodes
// records from request bodies (the HTTP front's JSON, its fuzz targets) needs nothing more.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sluice::backend::api {

using message_header = std::pair<std::string, std::optional<std::string>>;

/// One record to produce, as bytes.
struct outgoing_record {
    std::optional<std::string> key;
    std::optional<std::string> value;
    std::vector<message_header> headers;
    /// The partition asked for; otherwise by key as Kafka's Java producer (murmur2), and
    /// records without either go, all of one send(), to one partition chosen round-robin
    /// across calls (sticky per call).
    std::optional<std::int32_t> partition;
    std::int64_t timestamp = -1;  // milliseconds since the epoch; -1: now
};

}  // namespace sluice::backend::api
