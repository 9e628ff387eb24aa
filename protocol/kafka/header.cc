#include "protocol/kafka/header.h"

namespace sluice::protocol::kafka {

int request_header_version(std::int16_t api_key, std::int16_t api_version) {
    const api_info* api = find_api(api_key);
    if (api == nullptr) {
        return 1;
    }
    if (api->first_flexible_version >= 0 && api_version >= api->first_flexible_version) {
        return 2;
    }
    return 1;
}

result<request_header> peek_request_header(bytes_view frame) {
    if (frame.size() < 8) {
        return fail(errc::truncated);
    }
    request_header h;
    h.api_key = load_i16(frame.data());
    h.api_version = load_i16(frame.data() + 2);
    h.correlation_id = load_i32(frame.data() + 4);
    h.header_version = request_header_version(h.api_key, h.api_version);
    return h;
}

result<request_header> decode_request_header(reader& r) {
    request_header h;
    h.api_key = r.i16();
    h.api_version = r.i16();
    h.correlation_id = r.i32();
    h.client_id = r.nullable_string(false);  // never compact, even in header v2
    h.header_version = request_header_version(h.api_key, h.api_version);
    if (h.header_version >= 2 && r.ok()) {
        const std::uint32_t tags = codec::read_tag_count(r);
        std::uint32_t last_tag = 0;
        for (std::uint32_t t = 0; t < tags && r.ok(); ++t) {
            const std::uint32_t tag = r.uvarint();
            if (t > 0 && tag <= last_tag) {
                r.fail(errc::invalid_value);  // tags must be strictly ascending
                break;
            }
            last_tag = tag;
            const std::uint32_t size = r.uvarint();
            const bytes_view body = r.take(size);
            if (r.ok()) {
                h.unknown_tagged_fields.push_back({tag, bytes(body.begin(), body.end())});
            }
        }
    }
    if (!r.ok()) {
        return fail(r.error());
    }
    return h;
}

void encode_request_header(writer& w, const request_header& h) {
    w.i16(h.api_key);
    w.i16(h.api_version);
    w.i32(h.correlation_id);
    w.nullable_string(h.client_id, false);
    if (h.header_version >= 2) {
        std::vector<codec::pending_tag> none;
        codec::write_tag_section(w, none, h.unknown_tagged_fields);
    }
}

void encode_response_header(writer& w, std::int32_t correlation_id, int header_version) {
    w.i32(correlation_id);
    if (header_version >= 1) {
        w.uvarint(0);  // no tagged fields
    }
}

}  // namespace sluice::protocol::kafka
