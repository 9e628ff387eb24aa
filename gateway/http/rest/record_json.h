// Records as the REST and stream APIs write them in JSON (owned by gateway/http/rest): reading
// the parts the produce calls share (headers, timestamps) and writing fetched records.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gateway/http/json.h"
#include "gateway/http/record_producer.h"

namespace sluice::gateway::rest {

/// Reads headers in the v3 form, [{"name": "...", "value": "<base64>" | null}], into `out`.
/// Returns what is wrong, or nullopt.
std::optional<std::string> read_headers(const json::value& v, outgoing_record& out);

/// A timestamp given as milliseconds since the epoch or as an RFC 3339 string.
std::optional<std::int64_t> read_timestamp(const json::value& v);

}  // namespace sluice::gateway::rest
