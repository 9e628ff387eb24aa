#include "backend/group/group_records.h"

#include "protocol/core/errc.h"

namespace sluice::backend::group {
namespace {

constexpr std::int16_t offset_key_type = 0;
constexpr std::int16_t group_key_type = 1;
constexpr std::int16_t value_version = 0;

std::vector<std::byte> take(protocol::writer& w) {
    auto v = w.buffer().view();
    return {v.begin(), v.end()};
}

void write_bytes(protocol::writer& w, const std::vector<std::byte>& b) {
    w.bytes_length(static_cast<std::int64_t>(b.size()), false);
    w.raw(protocol::bytes_view(b.data(), b.size()));
}

std::vector<std::byte> read_bytes(protocol::reader& r) {
    std::int64_t n = r.bytes_length(false);
    if (n < 0) {
        if (r.ok()) {
            r.fail(protocol::errc::invalid_length);
        }
        return {};
    }
    auto v = r.take(static_cast<std::size_t>(n));
    return {v.begin(), v.end()};
}

/// A nullable string with an int32 length (metadata may exceed the int16 limit of strings).
void write_long_nullable_string(protocol::writer& w, const std::optional<std::string>& s) {
    if (!s) {
        w.i32(-1);
        return;
    }
    w.i32(static_cast<std::int32_t>(s->size()));
    w.raw(protocol::as_bytes(*s));
}

std::optional<std::string> read_long_nullable_string(protocol::reader& r) {
    std::int64_t n = r.bytes_length(false);
    if (n < 0) {
        return std::nullopt;
    }
    auto v = r.take(static_cast<std::size_t>(n));
    return std::string(protocol::as_chars(v));
}

template <typename T>
result<T> finish(protocol::reader& r, T value) {
    if (!r.ok()) {
        return fail(r.error());
    }
    return value;
}

}  // namespace

std::vector<std::byte> encode_key(const record_key& key) {
    protocol::writer w(64);
    if (const auto* k = std::get_if<offset_key>(&key)) {
        w.i16(offset_key_type);
        w.string(k->group, false);
        w.string(k->topic, false);
        w.i32(k->partition);
    } else {
        w.i16(group_key_type);
        w.string(std::get<group_key>(key).group, false);
    }
    return take(w);
}

std::vector<std::byte> encode_offset_value(const committed_offset& v) {
    protocol::writer w(48);
    w.i16(value_version);
    w.i64(v.committed.value);
    w.i32(v.leader_epoch);
    write_long_nullable_string(w, v.metadata);
    w.i64(v.commit_timestamp_ms);
    w.i64(v.expire_timestamp_ms);
    return take(w);
}

std::vector<std::byte> encode_group_value(const stored_group& v) {
    protocol::writer w(128);
    w.i16(value_version);
    w.i8(static_cast<std::int8_t>(v.kind));
    w.i64(v.state_timestamp_ms);
    if (v.kind == group_kind::consumer) {
        w.i32(v.group_epoch);
        return take(w);
    }
    w.string(v.protocol_type, false);
    w.i32(v.generation_id);
    w.nullable_string(v.protocol_name, false);
    w.nullable_string(v.leader, false);
    w.i32(static_cast<std::int32_t>(v.members.size()));
    for (const auto& m : v.members) {
        w.string(m.member_id, false);
        w.nullable_string(m.group_instance_id, false);
        w.string(m.client_id, false);
        w.string(m.client_host, false);
        w.i32(m.rebalance_timeout_ms);
        w.i32(m.session_timeout_ms);
        w.string(m.protocol_type, false);
        write_bytes(w, m.metadata);
        write_bytes(w, m.assignment);
    }
    return take(w);
}

encoded_record offset_record(const std::string& group, const std::string& topic,
                             std::int32_t partition, const committed_offset& v) {
    return {encode_key(offset_key{group, topic, partition}), encode_offset_value(v)};
}

encoded_record offset_tombstone(const std::string& group, const std::string& topic,
                                std::int32_t partition) {
    return {encode_key(offset_key{group, topic, partition}), std::nullopt};
}

encoded_record group_record(const std::string& group, const stored_group& v) {
    return {encode_key(group_key{group}), encode_group_value(v)};
}

encoded_record group_tombstone(const std::string& group) {
    return {encode_key(group_key{group}), std::nullopt};
}

result<record_key> decode_key(protocol::bytes_view bytes) {
    protocol::reader r(bytes);
    const std::int16_t type = r.i16();
    if (type == offset_key_type) {
        offset_key k;
        k.group = r.string(false);
        k.topic = r.string(false);
        k.partition = r.i32();
        return finish<record_key>(r, k);
    }
    if (type == group_key_type) {
        group_key k;
        k.group = r.string(false);
        return finish<record_key>(r, k);
    }
    if (!r.ok()) {
        return fail(r.error());
    }
    return fail(protocol::make_error_code(protocol::errc::invalid_value));
}

result<committed_offset> decode_offset_value(protocol::bytes_view bytes) {
    protocol::reader r(bytes);
    if (r.i16() != value_version || !r.ok()) {
        return fail(protocol::make_error_code(protocol::errc::invalid_value));
    }
    committed_offset v;
    v.committed = offset(r.i64());
    v.leader_epoch = r.i32();
    v.metadata = read_long_nullable_string(r);
    v.commit_timestamp_ms = r.i64();
    v.expire_timestamp_ms = r.i64();
    return finish(r, std::move(v));
}

result<stored_group> decode_group_value(protocol::bytes_view bytes) {
    protocol::reader r(bytes);
    if (r.i16() != value_version || !r.ok()) {
        return fail(protocol::make_error_code(protocol::errc::invalid_value));
    }
    stored_group v;
    const std::int8_t kind = r.i8();
    if (kind != 0 && kind != 1) {
        return fail(protocol::make_error_code(protocol::errc::invalid_value));
    }
    v.kind = static_cast<group_kind>(kind);
    v.state_timestamp_ms = r.i64();
    if (v.kind == group_kind::consumer) {
        v.group_epoch = r.i32();
        return finish(r, std::move(v));
    }
    v.protocol_type = r.string(false);
    v.generation_id = r.i32();
    v.protocol_name = r.nullable_string(false);
    v.leader = r.nullable_string(false);
    const std::int32_t count = r.i32();
    // Each member takes at least 30 bytes: check the count against what is left.
    if (count < 0 || static_cast<std::size_t>(count) > r.remaining() / 30) {
        return fail(protocol::make_error_code(protocol::errc::invalid_length));
    }
    v.members.reserve(static_cast<std::size_t>(count));
    for (std::int32_t i = 0; i < count && r.ok(); ++i) {
        stored_member m;
        m.member_id = r.string(false);
        m.group_instance_id = r.nullable_string(false);
        m.client_id = r.string(false);
        m.client_host = r.string(false);
        m.rebalance_timeout_ms = r.i32();
        m.session_timeout_ms = r.i32();
        m.protocol_type = r.string(false);
        m.metadata = read_bytes(r);
        m.assignment = read_bytes(r);
        v.members.push_back(std::move(m));
    }
    return finish(r, std::move(v));
}

}  // namespace sluice::backend::group
