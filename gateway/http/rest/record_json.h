// Records as REST produce bodies carry them (owned by gateway/http/rest): the v2 form
// {"key","value","partition","headers","timestamp"} with keys and values in the request's
// embedded format, and the v3 form with typed keys and values ({"type","data"}), read into the
// records the producer takes; and the RFC 3339 timestamps both APIs read and write. Plain
// functions over parsed JSON, without the server around them (tests/fuzz reads them too).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "gateway/http/error_codes.h"
#include "gateway/http/json.h"
#include "gateway/http/outgoing_record.h"

namespace sluice::gateway::rest {

/// Why a record of a produce body cannot be produced: the REST Proxy's code and message.
struct record_error {
    code c = code::bad_request;
    std::string message;
};

/// One record of a v2 body. `json_values`: keys and values are JSON values, stored as their
/// text (application/vnd.kafka.json.v2+json); otherwise base64 strings (binary).
/// `url_partition`: the partition of a /partitions/{p} path, for records that name none.
std::variant<outgoing_record, record_error> read_v2_record(
    const json::value& r, bool json_values, std::optional<std::int32_t> url_partition);

/// What a v3 report says of a record's key or value: its type and size in bytes.
struct data_info {
    std::string type;
    std::size_t size = 0;
};

/// One record of a v3 body, and what its report says about its key and value.
struct v3_record {
    outgoing_record record;
    std::optional<data_info> key;
    std::optional<data_info> value;
};

/// One record of a v3 body: {"partition_id"?, "headers"?, "key"?, "value"?, "timestamp"?}
/// with typed keys and values (BINARY, JSON, STRING). Errors are 400s.
std::variant<v3_record, record_error> read_v3_record(const json::value& v);

/// Reads headers in the v3 form, [{"name": "...", "value": "<base64>" | null}], into `out`.
/// Returns what is wrong, or nullopt.
std::optional<std::string> read_headers(const json::value& v, outgoing_record& out);

/// A timestamp given as milliseconds since the epoch or as an RFC 3339 string.
std::optional<std::int64_t> read_timestamp(const json::value& v);

/// Parses an RFC 3339 / ISO 8601 date-time ("2021-02-05T19:14:42Z", fractions and offsets
/// allowed) as milliseconds since the epoch.
std::optional<std::int64_t> parse_timestamp(std::string_view text);
/// The RFC 3339 form of `ms` (UTC, milliseconds).
std::string format_timestamp(std::int64_t ms);

}  // namespace sluice::gateway::rest
