// The records of __consumer_offsets in Kafka's layout, and sluice's legacy layout (read only).
// compat: the field orders and versions follow Kafka's group coordinator message definitions
// (OffsetCommitKey/Value, GroupMetadataKey/Value, ConsumerGroup*Key/Value, Kafka 4.0) and the
// versions its GroupCoordinatorRecordHelpers writes.
#include "backend/group/group_records.h"

#include "protocol/core/errc.h"

namespace sluice::backend::group {
namespace {

using protocol::reader;
using protocol::writer;

constexpr std::int16_t offset_value_version = 3;
constexpr std::int16_t offset_value_version_with_expiry = 1;
constexpr std::int16_t group_value_version = 3;
constexpr std::int16_t consumer_value_version = 0;
constexpr std::int16_t legacy_value_version = 0;

std::vector<std::byte> take(writer& w) {
    auto v = w.buffer().view();
    return {v.begin(), v.end()};
}

std::error_code bad_value() {
    return protocol::make_error_code(protocol::errc::invalid_value);
}

/// The decoded value if every byte was read, else the reader's error (or invalid_value for
/// bytes left over: a value is never trusted in part).
template <typename T>
result<T> finish(reader& r, T value) {
    if (!r.ok()) {
        return fail(r.error());
    }
    if (r.remaining() != 0) {
        return fail(bad_value());
    }
    return value;
}

// --- classic (non-flexible) and flexible field helpers -----------------------------------

void write_bytes(writer& w, const std::vector<std::byte>& b, bool compact) {
    w.bytes_length(static_cast<std::int64_t>(b.size()), compact);
    w.raw(protocol::bytes_view(b.data(), b.size()));
}

std::vector<std::byte> read_bytes(reader& r, bool compact) {
    const std::int64_t n = r.bytes_length(compact);
    if (n < 0) {
        if (r.ok()) {
            r.fail(protocol::errc::invalid_length);  // null where the field is not nullable
        }
        return {};
    }
    auto v = r.take(static_cast<std::size_t>(n));
    return {v.begin(), v.end()};
}

/// An empty tagged-field section (we write no tagged fields).
void write_no_tags(writer& w) {
    w.uvarint(0);
}

/// Skips a tagged-field section: fields a newer writer added are not ours to interpret.
void skip_tags(reader& r) {
    const std::uint32_t count = r.uvarint();
    for (std::uint32_t i = 0; i < count && r.ok(); ++i) {
        (void)r.uvarint();  // the tag
        const std::uint32_t size = r.uvarint();
        r.skip(size);
    }
}

/// The element count of a non-nullable array, or -1 after failing the reader.
std::int64_t read_count(reader& r, bool compact, std::size_t min_element_bytes) {
    const std::int64_t n = r.array_length(compact, min_element_bytes);
    if (n < 0 && r.ok()) {
        r.fail(protocol::errc::invalid_length);
    }
    return n;
}

void write_partitions(writer& w, const topic_partitions& tp) {
    w.array_length(static_cast<std::int64_t>(tp.size()), true);
    for (const auto& [topic, parts] : tp) {
        w.write_uuid(topic);
        w.array_length(static_cast<std::int64_t>(parts.size()), true);
        for (std::int32_t p : parts) {
            w.i32(p);
        }
        write_no_tags(w);
    }
}

topic_partitions read_partitions(reader& r) {
    topic_partitions out;
    const std::int64_t topics = read_count(r, true, 18);  // uuid, count, tags
    for (std::int64_t i = 0; i < topics && r.ok(); ++i) {
        auto& parts = out[r.read_uuid()];
        const std::int64_t n = read_count(r, true, 4);
        for (std::int64_t j = 0; j < n && r.ok(); ++j) {
            parts.insert(r.i32());
        }
        skip_tags(r);
    }
    return out;
}

/// Reads the int16 version of a value; fails the reader when it is outside [lo, hi].
std::int16_t read_version(reader& r, std::int16_t lo, std::int16_t hi) {
    const std::int16_t v = r.i16();
    if (r.ok() && (v < lo || v > hi)) {
        r.fail(protocol::errc::invalid_value);
    }
    return v;
}

/// sluice's legacy offset value (version 0): offset, leader epoch, an int32-length nullable
/// metadata, commit and expire timestamps.
result<committed_offset> decode_legacy_offset_value(protocol::bytes_view bytes) {
    reader r(bytes);
    if (r.i16() != legacy_value_version) {
        return fail(bad_value());
    }
    committed_offset v;
    v.committed = offset(r.i64());
    v.leader_epoch = r.i32();
    const std::int64_t n = r.bytes_length(false);
    if (n >= 0) {
        v.metadata = std::string(protocol::as_chars(r.take(static_cast<std::size_t>(n))));
    }
    v.commit_timestamp_ms = r.i64();
    v.expire_timestamp_ms = r.i64();
    return finish(r, std::move(v));
}

}  // namespace

// --- keys --------------------------------------------------------------------------------

std::vector<std::byte> encode_key(const record_key& key) {
    writer w(64);
    if (const auto* k = std::get_if<offset_key>(&key)) {
        w.i16(static_cast<std::int16_t>(record_type::offset_commit));
        w.string(k->group, false);
        w.string(k->topic, false);
        w.i32(k->partition);
    } else if (const auto* g = std::get_if<group_key>(&key)) {
        w.i16(static_cast<std::int16_t>(record_type::group_metadata));
        w.string(g->group, false);
    } else if (const auto* c = std::get_if<consumer_group_key>(&key)) {
        w.i16(static_cast<std::int16_t>(c->type));
        w.string(c->group, false);
    } else {
        const auto& m = std::get<consumer_member_key>(key);
        w.i16(static_cast<std::int16_t>(m.type));
        w.string(m.group, false);
        w.string(m.member_id, false);
    }
    return take(w);
}

result<decoded_key> decode_key(protocol::bytes_view bytes) {
    reader r(bytes);
    const std::int16_t raw = r.i16();
    if (!r.ok()) {
        return fail(r.error());
    }
    const auto type = static_cast<record_type>(raw);
    switch (type) {
        case record_type::offset_commit_v0:
        case record_type::offset_commit: {
            offset_key k;
            k.group = r.string(false);
            if (type == record_type::offset_commit && r.ok() && r.remaining() == 0) {
                // compat: sluice's legacy group-state key: type 1 and a group id only.
                return decoded_key{group_key{std::move(k.group)}, true};
            }
            k.topic = r.string(false);
            k.partition = r.i32();
            // Key type 0 is never written now: it is the legacy offset key.
            return finish(r, decoded_key{std::move(k), type == record_type::offset_commit_v0});
        }
        case record_type::group_metadata: {
            group_key k;
            k.group = r.string(false);
            return finish(r, decoded_key{std::move(k), false});
        }
        case record_type::consumer_group_metadata:
        case record_type::consumer_group_partition_metadata:
        case record_type::consumer_group_target_assignment_metadata: {
            consumer_group_key k{type, r.string(false)};
            return finish(r, decoded_key{std::move(k), false});
        }
        case record_type::consumer_group_member_metadata:
        case record_type::consumer_group_target_assignment_member:
        case record_type::consumer_group_current_member_assignment: {
            consumer_member_key k;
            k.type = type;
            k.group = r.string(false);
            k.member_id = r.string(false);
            return finish(r, decoded_key{std::move(k), false});
        }
    }
    return fail(bad_value());  // share and streams groups, or a type from a later Kafka
}

// --- committed offsets -------------------------------------------------------------------

std::vector<std::byte> encode_offset_value(const committed_offset& v) {
    writer w(48);
    const bool expiring = v.expire_timestamp_ms >= 0;
    w.i16(expiring ? offset_value_version_with_expiry : offset_value_version);
    w.i64(v.committed.value);
    if (!expiring) {
        w.i32(v.leader_epoch);
    }
    w.string(v.metadata.value_or(""), false);
    w.i64(v.commit_timestamp_ms);
    if (expiring) {
        w.i64(v.expire_timestamp_ms);
    }
    return take(w);
}

result<committed_offset> decode_offset_value(protocol::bytes_view bytes, bool legacy) {
    if (legacy) {
        // A legacy value and a Kafka version 0 value share the version number; only one of
        // them reads every byte.
        if (auto v = decode_legacy_offset_value(bytes)) {
            return v;
        }
    }
    reader r(bytes);
    const std::int16_t version = read_version(r, 0, 4);
    const bool flexible = version >= 4;
    committed_offset v;
    v.committed = offset(r.i64());
    if (version >= 3) {
        v.leader_epoch = r.i32();
    }
    v.metadata = r.string(flexible);
    v.commit_timestamp_ms = r.i64();
    if (version == 1) {
        v.expire_timestamp_ms = r.i64();
    }
    if (flexible) {
        skip_tags(r);
    }
    return finish(r, std::move(v));
}

// --- classic groups ----------------------------------------------------------------------

std::vector<std::byte> encode_group_value(const stored_group& v) {
    writer w(128);
    w.i16(group_value_version);
    w.string(v.protocol_type, false);
    w.i32(v.generation_id);
    w.nullable_string(v.protocol_name, false);
    w.nullable_string(v.leader, false);
    w.i64(v.state_timestamp_ms);
    w.i32(static_cast<std::int32_t>(v.members.size()));
    for (const auto& m : v.members) {
        w.string(m.member_id, false);
        w.nullable_string(m.group_instance_id, false);
        w.string(m.client_id, false);
        w.string(m.client_host, false);
        w.i32(m.rebalance_timeout_ms);
        w.i32(m.session_timeout_ms);
        write_bytes(w, m.subscription, false);
        write_bytes(w, m.assignment, false);
    }
    return take(w);
}

result<stored_group> decode_group_value(protocol::bytes_view bytes) {
    reader r(bytes);
    const std::int16_t version = read_version(r, 0, 4);
    const bool flexible = version >= 4;
    stored_group v;
    v.protocol_type = r.string(flexible);
    v.generation_id = r.i32();
    v.protocol_name = r.nullable_string(flexible);
    v.leader = r.nullable_string(flexible);
    if (version >= 2) {
        v.state_timestamp_ms = r.i64();
    }
    // Each member takes at least 18 bytes (three empty strings, a timeout, two empty bytes);
    // 10 in the flexible version (compact lengths and the tagged-field count).
    const std::int64_t count = read_count(r, flexible, flexible ? 10 : 18);
    for (std::int64_t i = 0; i < count && r.ok(); ++i) {
        stored_member m;
        m.member_id = r.string(flexible);
        if (version >= 3) {
            m.group_instance_id = r.nullable_string(flexible);
        }
        m.client_id = r.string(flexible);
        m.client_host = r.string(flexible);
        m.rebalance_timeout_ms = -1;
        if (version >= 1) {
            m.rebalance_timeout_ms = r.i32();
        }
        m.session_timeout_ms = r.i32();
        m.subscription = read_bytes(r, flexible);
        m.assignment = read_bytes(r, flexible);
        if (flexible) {
            skip_tags(r);
        }
        v.members.push_back(std::move(m));
    }
    if (flexible) {
        skip_tags(r);
    }
    return finish(r, std::move(v));
}

result<legacy_group_state> decode_legacy_group_value(protocol::bytes_view bytes) {
    reader r(bytes);
    if (r.i16() != legacy_value_version || !r.ok()) {
        return fail(bad_value());
    }
    legacy_group_state v;
    const std::int8_t kind = r.i8();
    if (kind != 0 && kind != 1) {
        return fail(bad_value());
    }
    v.consumer = kind == 1;
    v.state_timestamp_ms = r.i64();
    if (v.consumer) {
        v.group_epoch = r.i32();
        return finish(r, std::move(v));
    }
    stored_group& g = v.classic;
    g.state_timestamp_ms = v.state_timestamp_ms;
    g.protocol_type = r.string(false);
    g.generation_id = r.i32();
    g.protocol_name = r.nullable_string(false);
    g.leader = r.nullable_string(false);
    // Each member takes at least 30 bytes.
    const std::int64_t count = read_count(r, false, 30);
    for (std::int64_t i = 0; i < count && r.ok(); ++i) {
        stored_member m;
        m.member_id = r.string(false);
        m.group_instance_id = r.nullable_string(false);
        m.client_id = r.string(false);
        m.client_host = r.string(false);
        m.rebalance_timeout_ms = r.i32();
        m.session_timeout_ms = r.i32();
        (void)r.string(false);  // the member's protocol type: the group's
        m.subscription = read_bytes(r, false);
        m.assignment = read_bytes(r, false);
        g.members.push_back(std::move(m));
    }
    return finish(r, std::move(v));
}

// --- KIP-848 groups ----------------------------------------------------------------------

std::vector<std::byte> encode_epoch_value(std::int32_t epoch) {
    writer w(8);
    w.i16(consumer_value_version);
    w.i32(epoch);
    write_no_tags(w);
    return take(w);
}

result<std::int32_t> decode_epoch_value(protocol::bytes_view bytes) {
    reader r(bytes);
    read_version(r, 0, 0);
    const std::int32_t epoch = r.i32();
    skip_tags(r);
    return finish(r, epoch);
}

std::vector<std::byte> encode_partition_metadata_value(
    const std::map<std::string, subscribed_topic>& topics) {
    writer w(64);
    w.i16(consumer_value_version);
    w.array_length(static_cast<std::int64_t>(topics.size()), true);
    for (const auto& [name, t] : topics) {
        w.write_uuid(t.id);
        w.string(name, true);
        w.i32(t.partitions);
        w.array_length(0, true);  // partition racks: none known
        write_no_tags(w);
    }
    write_no_tags(w);
    return take(w);
}

result<std::map<std::string, subscribed_topic>> decode_partition_metadata_value(
    protocol::bytes_view bytes) {
    reader r(bytes);
    read_version(r, 0, 0);
    std::map<std::string, subscribed_topic> out;
    const std::int64_t count = read_count(r, true, 23);  // uuid, name, int32, racks, tags
    for (std::int64_t i = 0; i < count && r.ok(); ++i) {
        subscribed_topic t;
        t.id = r.read_uuid();
        std::string name = r.string(true);
        t.partitions = r.i32();
        const std::int64_t racks = read_count(r, true, 6);  // int32, racks, tags
        for (std::int64_t j = 0; j < racks && r.ok(); ++j) {
            (void)r.i32();
            const std::int64_t names = read_count(r, true, 1);
            for (std::int64_t k = 0; k < names && r.ok(); ++k) {
                (void)r.string(true);
            }
            skip_tags(r);
        }
        skip_tags(r);
        out[std::move(name)] = t;
    }
    skip_tags(r);
    return finish(r, std::move(out));
}

std::vector<std::byte> encode_member_metadata_value(const member_metadata& v) {
    writer w(128);
    w.i16(consumer_value_version);
    w.nullable_string(v.instance_id, true);
    w.nullable_string(v.rack_id, true);
    w.string(v.client_id, true);
    w.string(v.client_host, true);
    w.array_length(static_cast<std::int64_t>(v.subscribed_topic_names.size()), true);
    for (const auto& t : v.subscribed_topic_names) {
        w.string(t, true);
    }
    w.nullable_string(v.subscribed_topic_regex, true);
    w.i32(v.rebalance_timeout_ms);
    w.nullable_string(v.server_assignor, true);
    write_no_tags(w);  // ClassicMemberMetadata (tag 0): only for classic members, none here
    return take(w);
}

result<member_metadata> decode_member_metadata_value(protocol::bytes_view bytes) {
    reader r(bytes);
    read_version(r, 0, 0);
    member_metadata v;
    v.instance_id = r.nullable_string(true);
    v.rack_id = r.nullable_string(true);
    v.client_id = r.string(true);
    v.client_host = r.string(true);
    const std::int64_t count = read_count(r, true, 1);
    for (std::int64_t i = 0; i < count && r.ok(); ++i) {
        v.subscribed_topic_names.push_back(r.string(true));
    }
    v.subscribed_topic_regex = r.nullable_string(true);
    v.rebalance_timeout_ms = r.i32();
    v.server_assignor = r.nullable_string(true);
    skip_tags(r);
    return finish(r, std::move(v));
}

std::vector<std::byte> encode_target_assignment_value(const topic_partitions& v) {
    writer w(64);
    w.i16(consumer_value_version);
    write_partitions(w, v);
    write_no_tags(w);
    return take(w);
}

result<topic_partitions> decode_target_assignment_value(protocol::bytes_view bytes) {
    reader r(bytes);
    read_version(r, 0, 0);
    auto v = read_partitions(r);
    skip_tags(r);
    return finish(r, std::move(v));
}

std::vector<std::byte> encode_member_assignment_value(const member_assignment& v) {
    writer w(64);
    w.i16(consumer_value_version);
    w.i32(v.member_epoch);
    w.i32(v.previous_member_epoch);
    w.i8(static_cast<std::int8_t>(v.state));
    write_partitions(w, v.assigned);
    write_partitions(w, v.pending_revocation);
    write_no_tags(w);
    return take(w);
}

result<member_assignment> decode_member_assignment_value(protocol::bytes_view bytes) {
    reader r(bytes);
    read_version(r, 0, 0);
    member_assignment v;
    v.member_epoch = r.i32();
    v.previous_member_epoch = r.i32();
    const std::int8_t state = r.i8();
    if (r.ok() && (state < 0 || state > 2)) {
        return fail(bad_value());  // Kafka's UNKNOWN (127) or a state we do not know
    }
    v.state = static_cast<member_state>(state);
    v.assigned = read_partitions(r);
    v.pending_revocation = read_partitions(r);
    skip_tags(r);
    return finish(r, std::move(v));
}

// --- records -----------------------------------------------------------------------------

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

encoded_record consumer_group_record(record_type type, const std::string& group,
                                     std::optional<std::vector<std::byte>> value) {
    return {encode_key(consumer_group_key{type, group}), std::move(value)};
}

encoded_record consumer_member_record(record_type type, const std::string& group,
                                      const std::string& member_id,
                                      std::optional<std::vector<std::byte>> value) {
    return {encode_key(consumer_member_key{type, group, member_id}), std::move(value)};
}

}  // namespace sluice::backend::group
