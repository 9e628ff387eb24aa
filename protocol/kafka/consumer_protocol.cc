#include "protocol/kafka/consumer_protocol.h"

namespace sluice::protocol::kafka {
namespace {

void write_partitions(writer& w, const topic_assignment& parts) {
    w.array_length(static_cast<std::int64_t>(parts.size()), false);
    for (const auto& [topic, list] : parts) {
        w.string(topic, false);
        w.array_length(static_cast<std::int64_t>(list.size()), false);
        for (auto p : list) {
            w.i32(p);
        }
    }
}

void write_bytes(writer& w, const std::optional<std::string>& b) {
    if (!b) {
        w.bytes_length(-1, false);
        return;
    }
    w.bytes_length(static_cast<std::int64_t>(b->size()), false);
    w.raw(as_bytes(*b));
}

topic_assignment read_partitions(reader& r) {
    topic_assignment out;
    const std::int64_t n = r.array_length(false, 6);
    for (std::int64_t i = 0; i < n && r.ok(); ++i) {
        std::string topic = r.string(false);
        const std::int64_t count = r.array_length(false, 4);
        auto& list = out[topic];
        for (std::int64_t k = 0; k < count && r.ok(); ++k) {
            list.push_back(r.i32());
        }
    }
    return out;
}

std::optional<std::string> read_bytes(reader& r) {
    const std::int64_t n = r.bytes_length(false);
    if (n < 0) {
        return std::nullopt;
    }
    return std::string(as_chars(r.take(static_cast<std::size_t>(n))));
}

}  // namespace

byte_buffer encode_subscription(const consumer_subscription& s) {
    writer w;
    w.i16(s.version);
    w.array_length(static_cast<std::int64_t>(s.topics.size()), false);
    for (const auto& t : s.topics) {
        w.string(t, false);
    }
    write_bytes(w, s.user_data);
    if (s.version >= 1) {
        write_partitions(w, s.owned_partitions);
    }
    if (s.version >= 2) {
        w.i32(s.generation);
    }
    if (s.version >= 3) {
        w.nullable_string(s.rack, false);
    }
    return std::move(w.buffer());
}

result<consumer_subscription> decode_subscription(bytes_view data) {
    reader r(data);
    consumer_subscription s;
    s.version = r.i16();
    if (r.ok() && s.version < 0) {
        return fail(errc::invalid_value);
    }
    const std::int64_t n = r.array_length(false, 2);
    for (std::int64_t i = 0; i < n && r.ok(); ++i) {
        s.topics.push_back(r.string(false));
    }
    s.user_data = read_bytes(r);
    if (s.version >= 1 && r.remaining() > 0) {
        s.owned_partitions = read_partitions(r);
    }
    if (s.version >= 2 && r.remaining() >= 4) {
        s.generation = r.i32();
    }
    if (s.version >= 3 && r.remaining() >= 2) {
        s.rack = r.nullable_string(false);
    }
    if (!r.ok()) {
        return fail(r.error());
    }
    return s;
}

byte_buffer encode_assignment(const consumer_assignment& a) {
    writer w;
    w.i16(a.version);
    write_partitions(w, a.partitions);
    write_bytes(w, a.user_data);
    return std::move(w.buffer());
}

result<consumer_assignment> decode_assignment(bytes_view data) {
    consumer_assignment a;
    if (data.empty()) {
        return a;  // compat: a member the leader gave nothing may get empty bytes
    }
    reader r(data);
    a.version = r.i16();
    if (r.ok() && a.version < 0) {
        return fail(errc::invalid_value);
    }
    a.partitions = read_partitions(r);
    if (r.remaining() > 0) {
        a.user_data = read_bytes(r);
    }
    if (!r.ok()) {
        return fail(r.error());
    }
    return a;
}

}  // namespace sluice::protocol::kafka
