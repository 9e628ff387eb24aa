// How the browser streams (WebSocket and SSE; owned by gateway/http) write a record in JSON:
// {"topic","partition","offset","timestamp","key","value","headers":{name: value}}, with keys,
// values and header values as UTF-8 strings ("string", invalid UTF-8 replaced by U+FFFD),
// base64 strings ("base64"), or JSON values where the bytes are JSON and strings otherwise
// ("json"). Stateless.
#pragma once

#include <optional>
#include <string_view>

#include "gateway/http/json.h"
#include "protocol/core/ids.h"
#include "protocol/kafka/record.h"

namespace sluice::gateway {

enum class stream_format { string, base64, json };

/// "string", "base64" or "json"; nullopt for anything else.
std::optional<stream_format> parse_stream_format(std::string_view name);

/// A key, value or header value in `format` (null stays null).
void write_stream_bytes(json::writer& w, std::optional<protocol::bytes_view> bytes,
                        stream_format format);

/// A record's headers as one object {name: value}; header values are never parsed as JSON
/// (the json format writes them as strings).
void write_stream_headers(json::writer& w, const protocol::kafka::header_range& headers,
                          stream_format format);

void write_stream_record(json::writer& w, const topic_name& topic, partition_id partition,
                         const protocol::kafka::record_view& r, stream_format format);

}  // namespace sluice::gateway
