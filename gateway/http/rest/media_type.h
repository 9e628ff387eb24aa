// The REST Proxy's media types (owned by gateway/http/rest): which embedded format a request
// body carries (Content-Type) and which one a client accepts for records (Accept).
//
//   application/vnd.kafka.binary.v2+json   keys and values are base64 strings
//   application/vnd.kafka.json.v2+json     keys and values are JSON values
//   application/vnd.kafka.avro.v2+json, .jsonschema., .protobuf.   schema formats (need a
//                                          schema registry, which sluice has not)
//   application/vnd.kafka.v2+json          no embedded data (metadata, consumer control)
//   application/json, application/octet-stream, none: taken as application/vnd.kafka.v2+json,
//                                          and for produce as binary (compat: the REST Proxy's
//                                          default embedded format, BINARY)
#pragma once

#include <optional>
#include <string_view>

namespace sluice::gateway::rest {

enum class media {
    v2,           // application/vnd.kafka.v2+json (or the generic forms above)
    binary,       // application/vnd.kafka.binary.v2+json
    json,         // application/vnd.kafka.json.v2+json
    schema,       // avro, jsonschema or protobuf
    unsupported,  // anything else: 415
};

/// The media of a Content-Type value (parameters such as charset ignored, case-insensitive).
media content_media(std::string_view content_type);

inline constexpr std::string_view v2_json = "application/vnd.kafka.v2+json";
inline constexpr std::string_view v2_binary = "application/vnd.kafka.binary.v2+json";
inline constexpr std::string_view v2_json_embedded = "application/vnd.kafka.json.v2+json";

/// What an Accept header allows for records: the instance's own format (nullopt: anything,
/// the generic v2 type, */* or no header), or one embedded format.
std::optional<media> accepted_records_media(std::string_view accept);

}  // namespace sluice::gateway::rest
