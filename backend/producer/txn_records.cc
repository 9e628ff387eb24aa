#include "backend/producer/txn_records.h"

#include "backend/producer/errc.h"

namespace sluice::backend::producer {

namespace {
constexpr std::int16_t key_type_txn = 0;
constexpr std::int16_t key_type_pid_block = 1;
constexpr std::int16_t value_version = 0;

void put_string(protocol::writer& w, const std::string& s) { w.string(s, false); }

protocol::byte_buffer take(protocol::writer& w) { return std::move(w.buffer()); }
}  // namespace

const char* txn_state_name(txn_state s) {
    switch (s) {
        case txn_state::empty: return "Empty";
        case txn_state::ongoing: return "Ongoing";
        case txn_state::prepare_commit: return "PrepareCommit";
        case txn_state::prepare_abort: return "PrepareAbort";
        case txn_state::complete_commit: return "CompleteCommit";
        case txn_state::complete_abort: return "CompleteAbort";
        case txn_state::dead: return "Dead";
        case txn_state::prepare_epoch_fence: return "PrepareEpochFence";
    }
    return "Unknown";
}

std::optional<txn_state> parse_txn_state(std::string_view name) {
    for (int i = 0; i <= 7; ++i) {
        auto s = static_cast<txn_state>(i);
        if (name == txn_state_name(s)) {
            return s;
        }
    }
    return std::nullopt;
}

protocol::byte_buffer encode_txn_key(const std::string& transactional_id) {
    protocol::writer w;
    w.i16(key_type_txn);
    put_string(w, transactional_id);
    return take(w);
}

protocol::byte_buffer encode_pid_block_key() {
    protocol::writer w;
    w.i16(key_type_pid_block);
    return take(w);
}

protocol::byte_buffer encode_txn_value(const txn_metadata& m) {
    protocol::writer w;
    w.i16(value_version);
    w.i64(m.producer_id);
    w.i64(m.last_producer_id);
    w.i64(m.next_producer_id);
    w.i16(m.producer_epoch);
    w.i16(m.last_producer_epoch);
    w.i32(m.timeout_ms);
    w.i8(static_cast<std::int8_t>(m.state));
    w.i64(m.start_ms);
    w.i64(m.last_update_ms);
    w.i8(m.tv2 ? 1 : 0);
    w.i32(static_cast<std::int32_t>(m.partitions.size()));
    for (const auto& tp : m.partitions) {
        put_string(w, tp.topic);
        w.i32(tp.partition);
    }
    w.i32(static_cast<std::int32_t>(m.groups.size()));
    for (const auto& [group, offsets] : m.groups) {
        put_string(w, group);
        w.i32(static_cast<std::int32_t>(offsets.size()));
        for (const auto& [tp, o] : offsets) {
            put_string(w, tp.topic);
            w.i32(tp.partition);
            w.i64(o.offset);
            w.i32(o.leader_epoch);
            w.nullable_string(o.metadata, false);
        }
    }
    return take(w);
}

protocol::byte_buffer encode_pid_block_value(std::int64_t block_end) {
    protocol::writer w;
    w.i16(value_version);
    w.i64(block_end);
    return take(w);
}

result<txn_record_key> decode_txn_record_key(protocol::bytes_view key) {
    protocol::reader r(key);
    const std::int16_t type = r.i16();
    if (!r.ok()) {
        return fail(errc::storage_error);
    }
    if (type == key_type_pid_block) {
        return txn_record_key(pid_block_key{});
    }
    if (type != key_type_txn) {
        return fail(errc::storage_error);
    }
    std::string id = r.string(false);
    if (!r.ok()) {
        return fail(errc::storage_error);
    }
    return txn_record_key(txn_key{std::move(id)});
}

result<txn_metadata> decode_txn_value(protocol::bytes_view value) {
    protocol::reader r(value);
    txn_metadata m;
    if (r.i16() != value_version) {
        return fail(errc::storage_error);
    }
    m.producer_id = r.i64();
    m.last_producer_id = r.i64();
    m.next_producer_id = r.i64();
    m.producer_epoch = r.i16();
    m.last_producer_epoch = r.i16();
    m.timeout_ms = r.i32();
    const std::int8_t state = r.i8();
    if (state < 0 || state > 7) {
        return fail(errc::storage_error);
    }
    m.state = static_cast<txn_state>(state);
    m.start_ms = r.i64();
    m.last_update_ms = r.i64();
    m.tv2 = (r.i8() & 1) != 0;
    const std::int64_t np = r.array_length(false, 6);
    for (std::int64_t i = 0; i < np && r.ok(); ++i) {
        topic_partition tp;
        tp.topic = r.string(false);
        tp.partition = r.i32();
        m.partitions.insert(std::move(tp));
    }
    const std::int64_t ng = r.array_length(false, 6);
    for (std::int64_t i = 0; i < ng && r.ok(); ++i) {
        std::string group = r.string(false);
        auto& offsets = m.groups[group];
        const std::int64_t no = r.array_length(false, 20);
        for (std::int64_t j = 0; j < no && r.ok(); ++j) {
            topic_partition tp;
            tp.topic = r.string(false);
            tp.partition = r.i32();
            pending_offset o;
            o.offset = r.i64();
            o.leader_epoch = r.i32();
            o.metadata = r.nullable_string(false);
            offsets[tp] = std::move(o);
        }
    }
    if (!r.ok() || np < 0 || ng < 0) {
        return fail(errc::storage_error);
    }
    return m;
}

result<std::int64_t> decode_pid_block_value(protocol::bytes_view value) {
    protocol::reader r(value);
    if (r.i16() != value_version) {
        return fail(errc::storage_error);
    }
    const std::int64_t end = r.i64();
    if (!r.ok() || end < 0) {
        return fail(errc::storage_error);
    }
    return end;
}

}  // namespace sluice::backend::producer
