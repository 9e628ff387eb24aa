// Kafka request and response headers.
//
// Request header v1: api_key int16, api_version int16, correlation_id int32, client_id
// nullable string (int16 length). v2 (flexible request versions) adds a tagged-field section.
// Response header v0: correlation_id int32; v1 adds a tagged-field section. ApiVersions
// responses always use v0 so that a client can read them before it knows our versions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "protocol/core/bytes.h"
#include "protocol/core/result.h"
#include "protocol/kafka/api_table.h"
#include "protocol/kafka/codec.h"

namespace sluice::protocol::kafka {

struct request_header {
    std::int16_t api_key = 0;
    std::int16_t api_version = 0;
    std::int32_t correlation_id = 0;
    std::optional<std::string> client_id;
    tagged_fields unknown_tagged_fields;
    /// 1 or 2; decided from the API and version when decoding.
    int header_version = 1;

    bool operator==(const request_header&) const = default;
};

/// The header version a request of this API and version uses. Versions above the codec's
/// maximum are taken as flexible when the API has flexible versions at all, which is what
/// lets us read a too-new ApiVersions request and answer it.
int request_header_version(std::int16_t api_key, std::int16_t api_version);

/// Reads the header from the start of a request frame; `r` is left at the body.
/// Fails only when the frame is too short to hold a header.
result<request_header> decode_request_header(reader& r);

/// Reads only api_key, api_version and correlation_id (8 bytes), for answering frames whose
/// header cannot be decoded in full.
result<request_header> peek_request_header(bytes_view frame);

void encode_request_header(writer& w, const request_header& h);
void encode_response_header(writer& w, std::int32_t correlation_id, int header_version);

}  // namespace sluice::protocol::kafka
