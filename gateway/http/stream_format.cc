#include "gateway/http/stream_format.h"

namespace sluice::gateway {

void write_stream_bytes(json::writer& w, std::optional<protocol::bytes_view> b,
                        stream_format format) {
    if (!b) {
        w.null();
        return;
    }
    const std::string_view text = protocol::as_chars(*b);
    switch (format) {
        case stream_format::string: w.string(text); return;
        case stream_format::base64: w.base64(text); return;
        case stream_format::json:
            if (json::is_json(text)) {
                w.raw(text);
            } else {
                w.string(text);
            }
            return;
    }
}

void write_stream_headers(json::writer& w, const protocol::kafka::header_range& headers,
                          stream_format format) {
    w.start_object();
    for (const auto& h : headers) {
        w.key(h.key);
        write_stream_bytes(w, h.value, format == stream_format::json ? stream_format::string
                                                                     : format);
    }
    w.end_object();
}

std::optional<stream_format> parse_stream_format(std::string_view name) {
    if (name == "string") {
        return stream_format::string;
    }
    if (name == "base64") {
        return stream_format::base64;
    }
    if (name == "json") {
        return stream_format::json;
    }
    return std::nullopt;
}

void write_stream_record(json::writer& w, const topic_name& topic, partition_id partition,
                         const protocol::kafka::record_view& r, stream_format format) {
    w.start_object();
    w.field("topic", topic.value);
    w.field("partition", partition.value);
    w.field("offset", r.offset);
    w.field("timestamp", r.timestamp);
    w.key("key");
    write_stream_bytes(w, r.key, format);
    w.key("value");
    write_stream_bytes(w, r.value, format);
    w.key("headers");
    write_stream_headers(w, r.headers, format);
    w.end_object();
}

}  // namespace sluice::gateway
