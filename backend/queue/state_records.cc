#include "backend/queue/state_records.h"

#include <cstring>

#include "protocol/core/assert.h"
#include "protocol/core/errc.h"

namespace sluice::backend::queue {
namespace {

namespace key_type {
constexpr std::int16_t queue = 0;
constexpr std::int16_t cursor = 1;
constexpr std::int16_t message = 2;
constexpr std::int16_t secret = 3;
constexpr std::int16_t deleted_queue = 4;
constexpr std::int16_t task = 5;
constexpr std::int16_t lease = 6;
}  // namespace key_type

constexpr std::int16_t value_version = 0;

void put_string(protocol::writer& w, std::string_view s) {
    w.i32(static_cast<std::int32_t>(s.size()));
    w.raw(protocol::as_bytes(s));
}

void put_nullable(protocol::writer& w, const std::optional<std::string>& s) {
    if (!s) {
        w.i32(-1);
    } else {
        put_string(w, *s);
    }
}

void put_map(protocol::writer& w, const api::attribute_map& m) {
    w.i32(static_cast<std::int32_t>(m.size()));
    for (const auto& [k, v] : m) {
        put_string(w, k);
        put_string(w, v);
    }
}

std::optional<std::string> get_nullable(protocol::reader& r) {
    const std::int64_t n = r.bytes_length(false);
    if (n < 0) {
        return std::nullopt;
    }
    return std::string(protocol::as_chars(r.take(static_cast<std::size_t>(n))));
}

std::string get_string(protocol::reader& r) {
    auto s = get_nullable(r);
    if (!s && r.ok()) {
        r.fail(protocol::errc::invalid_length);
    }
    return s.value_or(std::string());
}

api::attribute_map get_map(protocol::reader& r) {
    api::attribute_map m;
    const std::int64_t n = r.array_length(false, 8);
    for (std::int64_t i = 0; i < n && r.ok(); ++i) {
        std::string k = get_string(r);
        m[std::move(k)] = get_string(r);
    }
    return m;
}

std::vector<std::byte> bytes_of(protocol::writer& w) {
    auto v = w.buffer().view();
    return {v.begin(), v.end()};
}

/// Big-endian fields into a vector sized up front: the fixed-size keys and values that every
/// receive and delete writes (one allocation each, no growing writer and no copy).
class state_fixed_writer {
public:
    explicit state_fixed_writer(std::size_t n) : bytes_(n) {}
    template <typename T>
    void put(T v) {
        protocol::detail::store_be(bytes_.data() + at_, v);
        at_ += sizeof(T);
    }
    void put_uuid(const uuid& u) {
        std::memcpy(bytes_.data() + at_, u.bytes.data(), 16);
        at_ += 16;
    }
    std::vector<std::byte> take() {
        SLUICE_ASSERT(at_ == bytes_.size());
        return std::move(bytes_);
    }

private:
    std::vector<std::byte> bytes_;
    std::size_t at_ = 0;
};

constexpr std::size_t cursor_key_bytes = 2 + 16 + 4;
constexpr std::size_t message_key_bytes = 2 + 16 + 4 + 8;
constexpr std::size_t cursor_value_bytes = 2 + 8;
constexpr std::size_t message_value_bytes = 2 + 1 + 4 + 8 + 8;

std::vector<std::byte> cursor_key_bytes_of(const uuid& queue_id, std::int32_t partition) {
    state_fixed_writer k(cursor_key_bytes);
    k.put(key_type::cursor);
    k.put_uuid(queue_id);
    k.put(partition);
    return k.take();
}

std::vector<std::byte> message_key_bytes_of(const uuid& queue_id, std::int32_t partition,
                                            std::int64_t offset) {
    state_fixed_writer k(message_key_bytes);
    k.put(key_type::message);
    k.put_uuid(queue_id);
    k.put(partition);
    k.put(offset);
    return k.take();
}

struct encoder {
    encoded_record operator()(const queue_record& q) const {
        protocol::writer k;
        k.i16(key_type::queue);
        put_string(k, q.name);
        protocol::writer v;
        v.i16(value_version);
        v.write_uuid(q.queue_id);
        v.write_uuid(q.topic_id);
        v.i8(q.owns_topic ? 1 : 0);
        v.i64(q.created_ms);
        v.i64(q.modified_ms);
        v.i64(q.last_purge_ms);
        put_map(v, q.attributes);
        put_map(v, q.tags);
        return {bytes_of(k), bytes_of(v)};
    }
    encoded_record operator()(const cursor_record& c) const { return encode(c); }
    encoded_record operator()(const message_record& m) const { return encode(m); }
    encoded_record operator()(const secret_record& s) const {
        protocol::writer k;
        k.i16(key_type::secret);
        protocol::writer v;
        v.i16(value_version);
        put_string(v, s.key);
        return {bytes_of(k), bytes_of(v)};
    }
    encoded_record operator()(const deleted_queue_record& d) const {
        protocol::writer v;
        v.i16(value_version);
        v.i64(d.deleted_ms);
        return {(*this)(deleted_queue_key{d.name}).key, bytes_of(v)};
    }
    encoded_record operator()(const task_record& t) const {
        protocol::writer v;
        v.i16(value_version);
        put_string(v, t.source);
        v.write_uuid(t.source_queue_id);
        put_nullable(v, t.destination_arn);
        v.i32(t.max_per_second);
        put_string(v, t.status);
        v.i64(t.moved);
        v.i64(t.to_move);
        put_nullable(v, t.failure_reason);
        v.i64(t.started_ms);
        v.i32(static_cast<std::int32_t>(t.end_offsets.size()));
        for (auto o : t.end_offsets) {
            v.i64(o);
        }
        return {(*this)(task_key{t.handle}).key, bytes_of(v)};
    }
    // Tombstones: the key alone.
    encoded_record operator()(const queue_key& q) const {
        protocol::writer k;
        k.i16(key_type::queue);
        put_string(k, q.name);
        return {bytes_of(k), std::nullopt};
    }
    encoded_record operator()(const cursor_key& c) const { return encode(c); }
    encoded_record operator()(const message_key& m) const { return encode(m); }
    encoded_record operator()(const deleted_queue_key& d) const {
        protocol::writer k;
        k.i16(key_type::deleted_queue);
        put_string(k, d.name);
        return {bytes_of(k), std::nullopt};
    }
    encoded_record operator()(const task_key& t) const {
        protocol::writer k;
        k.i16(key_type::task);
        put_string(k, t.handle);
        return {bytes_of(k), std::nullopt};
    }
    encoded_record operator()(const lease_record& l) const {
        protocol::writer v;
        v.i16(value_version);
        v.i64(l.below);
        v.i64(l.until_ms);
        return {(*this)(lease_key{l.queue_id, l.partition}).key, bytes_of(v)};
    }
    encoded_record operator()(const lease_key& l) const {
        protocol::writer k;
        k.i16(key_type::lease);
        k.write_uuid(l.queue_id);
        k.i32(l.partition);
        return {bytes_of(k), std::nullopt};
    }
};

template <typename T>
result<state_entry> finish(const protocol::reader& key, const protocol::reader* value, T entry) {
    if (!key.ok()) {
        return fail(key.error());
    }
    if (key.remaining() != 0) {
        return fail(protocol::errc::trailing_bytes);
    }
    if (value != nullptr && !value->ok()) {
        return fail(value->error());
    }
    return state_entry(std::move(entry));
}

}  // namespace

encoded_record encode(const state_entry& entry) { return std::visit(encoder{}, entry); }

encoded_record encode(const cursor_record& c) {
    state_fixed_writer v(cursor_value_bytes);
    v.put(value_version);
    v.put(c.cursor);
    return {cursor_key_bytes_of(c.queue_id, c.partition), v.take()};
}

encoded_record encode(const message_record& m) {
    state_fixed_writer v(message_value_bytes);
    v.put(value_version);
    v.put(static_cast<std::int8_t>(m.phase));
    v.put(m.receive_count);
    v.put(m.visible_at_ms);
    v.put(m.first_receive_ms);
    return {message_key_bytes_of(m.queue_id, m.partition, m.offset), v.take()};
}

encoded_record encode(const cursor_key& c) {
    return {cursor_key_bytes_of(c.queue_id, c.partition), std::nullopt};
}

encoded_record encode(const message_key& m) {
    return {message_key_bytes_of(m.queue_id, m.partition, m.offset), std::nullopt};
}

bool names_a_queue(protocol::bytes_view key) {
    if (key.size() < 2) {
        return false;
    }
    const auto type = static_cast<std::int16_t>((std::to_integer<unsigned>(key[0]) << 8) |
                                                std::to_integer<unsigned>(key[1]));
    return type == key_type::queue || type == key_type::deleted_queue;
}

result<state_entry> decode(protocol::bytes_view key, std::optional<protocol::bytes_view> value) {
    protocol::reader k(key);
    const std::int16_t type = k.i16();
    if (!k.ok()) {
        return fail(k.error());
    }
    std::optional<protocol::reader> v;
    if (value) {
        v.emplace(*value);
        if (v->i16() != value_version || !v->ok()) {
            return fail(v->ok() ? protocol::errc::unsupported_version : v->error());
        }
    }
    protocol::reader* vp = v ? &*v : nullptr;
    switch (type) {
        case key_type::queue: {
            std::string name = get_string(k);
            if (!v) {
                return finish(k, nullptr, queue_key{std::move(name)});
            }
            queue_record q;
            q.name = std::move(name);
            q.queue_id = v->read_uuid();
            q.topic_id = v->read_uuid();
            q.owns_topic = (v->i8() & 1) != 0;
            q.created_ms = v->i64();
            q.modified_ms = v->i64();
            q.last_purge_ms = v->i64();
            q.attributes = get_map(*v);
            q.tags = get_map(*v);
            return finish(k, vp, std::move(q));
        }
        case key_type::cursor: {
            cursor_key c{k.read_uuid(), k.i32()};
            if (!v) {
                return finish(k, nullptr, c);
            }
            return finish(k, vp, cursor_record{c.queue_id, c.partition, v->i64()});
        }
        case key_type::message: {
            message_key m{k.read_uuid(), k.i32(), k.i64()};
            if (!v) {
                return finish(k, nullptr, m);
            }
            message_record r{m.queue_id, m.partition, m.offset};
            const std::int8_t phase = v->i8();
            if (phase != 0 && phase != 1) {
                return fail(protocol::errc::invalid_value);
            }
            r.phase = static_cast<stored_phase>(phase);
            r.receive_count = v->i32();
            r.visible_at_ms = v->i64();
            r.first_receive_ms = v->i64();
            return finish(k, vp, r);
        }
        case key_type::secret: {
            if (!v) {
                return fail(protocol::errc::invalid_value);  // the secret is never removed
            }
            secret_record s{get_string(*v)};
            return finish(k, vp, std::move(s));
        }
        case key_type::deleted_queue: {
            std::string name = get_string(k);
            if (!v) {
                return finish(k, nullptr, deleted_queue_key{std::move(name)});
            }
            deleted_queue_record d{std::move(name), v->i64()};
            return finish(k, vp, std::move(d));
        }
        case key_type::task: {
            std::string handle = get_string(k);
            if (!v) {
                return finish(k, nullptr, task_key{std::move(handle)});
            }
            task_record t;
            t.handle = std::move(handle);
            t.source = get_string(*v);
            t.source_queue_id = v->read_uuid();
            t.destination_arn = get_nullable(*v);
            t.max_per_second = v->i32();
            t.status = get_string(*v);
            t.moved = v->i64();
            t.to_move = v->i64();
            t.failure_reason = get_nullable(*v);
            t.started_ms = v->i64();
            const std::int64_t n = v->array_length(false, 8);
            for (std::int64_t i = 0; i < n && v->ok(); ++i) {
                t.end_offsets.push_back(v->i64());
            }
            return finish(k, vp, std::move(t));
        }
        case key_type::lease: {
            lease_key l{k.read_uuid(), k.i32()};
            if (!v) {
                return finish(k, nullptr, l);
            }
            lease_record r{l.queue_id, l.partition};
            r.below = v->i64();
            r.until_ms = v->i64();
            return finish(k, vp, r);
        }
        default:
            return fail(protocol::errc::unsupported_version);
    }
}

}  // namespace sluice::backend::queue
