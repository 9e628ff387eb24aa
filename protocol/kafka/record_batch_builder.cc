#include "protocol/kafka/record_batch_builder.h"

#include <array>
#include <cstring>
#include <limits>

#include "protocol/core/assert.h"
#include "protocol/core/errc.h"
#include "protocol/core/varint.h"
#include "protocol/core/wrapping.h"

namespace sluice::protocol::kafka {
namespace {

constexpr std::size_t max_int32 =
    static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max());

/// Size of a varint length plus the bytes (-1 for null takes one byte).
std::size_t field_size(const std::optional<bytes_view>& f) {
    if (!f) {
        return 1;
    }
    return varint_size(static_cast<std::int32_t>(f->size())) + f->size();
}

bool fits_int32(const std::optional<bytes_view>& f) { return !f || f->size() <= max_int32; }

/// Raw writes at a cursor into memory already sized by encoded_record_size.
struct cursor {
    std::byte* p;

    void byte(std::int8_t v) { *p++ = static_cast<std::byte>(v); }
    void varint(std::int32_t v) { p += put_uvarint(p, zigzag32(v)); }
    void varlong(std::int64_t v) { p += put_uvarint(p, zigzag64(v)); }
    void raw(bytes_view b) {
        if (!b.empty()) {
            std::memcpy(p, b.data(), b.size());
            p += b.size();
        }
    }
    void field(const std::optional<bytes_view>& f) {
        if (!f) {
            varint(-1);
            return;
        }
        varint(static_cast<std::int32_t>(f->size()));
        raw(*f);
    }
};

}  // namespace

record_batch_builder::record_batch_builder(batch_options options) : options_(options) { reset(); }

void record_batch_builder::reset() {
    buffer_.clear();
    buffer_.grow(batch_header_size);  // written at finish()
    count_ = 0;
    base_timestamp_ = -1;
    max_timestamp_ = -1;
    error_.clear();
}

void record_batch_builder::reserve(std::size_t bytes) { buffer_.reserve(buffer_.size() + bytes); }

namespace {

/// Bytes of a record after its length varint.
std::size_t record_body_size(const new_record& record, std::int32_t offset_delta,
                             std::int64_t timestamp_delta) {
    std::size_t body = 1 + varlong_size(timestamp_delta) + varint_size(offset_delta) +
                       field_size(record.key) + field_size(record.value) +
                       varint_size(static_cast<std::int32_t>(record.headers.size()));
    for (const auto& h : record.headers) {
        body += varint_size(static_cast<std::int32_t>(h.key.size())) + h.key.size() +
                field_size(h.value);
    }
    return body;
}

}  // namespace

std::size_t record_batch_builder::encoded_record_size(const new_record& record,
                                                      std::int32_t offset_delta,
                                                      std::int64_t timestamp_delta) {
    std::size_t body = record_body_size(record, offset_delta, timestamp_delta);
    return varint_size(static_cast<std::int32_t>(body)) + body;
}

void record_batch_builder::add(const new_record& record) {
    if (error_) {
        return;
    }
    // Every length must fit the format's int32 before any size is computed from it.
    bool fits = fits_int32(record.key) && fits_int32(record.value) &&
                record.headers.size() <= max_int32 &&
                count_ < std::numeric_limits<std::int32_t>::max();
    for (const auto& h : record.headers) {
        fits = fits && h.key.size() <= max_int32 && fits_int32(h.value);
    }
    if (!fits) {
        error_ = make_error_code(errc::too_large);
        return;
    }
    if (count_ == 0) {
        base_timestamp_ = record.timestamp;
        max_timestamp_ = record.timestamp;
    } else if (record.timestamp > max_timestamp_) {
        max_timestamp_ = record.timestamp;
    }
    std::int64_t timestamp_delta = wrapping_sub(record.timestamp, base_timestamp_);
    std::size_t body = record_body_size(record, count_, timestamp_delta);
    // The batch length is an int32 too (5 = the longest length varint).
    if (body > max_int32 || buffer_.size() + body + 5 > max_int32) {
        error_ = make_error_code(errc::too_large);
        return;
    }
    std::size_t total = varint_size(static_cast<std::int32_t>(body)) + body;

    cursor c{buffer_.grow(total)};
    c.varint(static_cast<std::int32_t>(body));
    c.byte(0);  // attributes: unused in v2 records
    c.varlong(timestamp_delta);
    c.varint(count_);
    c.field(record.key);
    c.field(record.value);
    c.varint(static_cast<std::int32_t>(record.headers.size()));
    for (const auto& h : record.headers) {
        c.varint(static_cast<std::int32_t>(h.key.size()));
        c.raw(as_bytes(h.key));
        c.field(h.value);
    }
    SLUICE_ASSERT(c.p == buffer_.data() + buffer_.size());
    ++count_;
}

result<byte_buffer> record_batch_builder::finish() {
    if (error_) {
        auto e = error_;
        reset();
        return fail(e);
    }
    byte_buffer out;
    if (options_.codec == compression::none) {
        out = std::move(buffer_);
    } else {
        bytes_view records = buffer_.view().subspan(batch_header_size);
        out.reserve(batch_header_size + records.size() / 2 + 64);
        out.grow(batch_header_size);
        auto c = compress(options_.codec, records, out, options_.compression_options);
        if (!c) {
            reset();
            return fail(c.error());
        }
    }
    if (out.size() - batch_log_overhead > max_int32) {
        reset();
        return fail(errc::too_large);
    }
    batch_header h;
    h.base_offset = options_.base_offset;
    h.batch_length = static_cast<std::int32_t>(out.size() - batch_log_overhead);
    h.partition_leader_epoch = options_.partition_leader_epoch;
    h.magic = current_magic;
    h.attributes = static_cast<std::int16_t>(static_cast<std::int16_t>(options_.codec) &
                                             batch_attr::compression_mask);
    if (options_.log_append_time) {
        h.attributes |= batch_attr::log_append_time;
    }
    if (options_.transactional) {
        h.attributes |= batch_attr::transactional;
    }
    if (options_.control) {
        h.attributes |= batch_attr::control;
    }
    h.last_offset_delta = count_ == 0 ? 0 : count_ - 1;
    h.base_timestamp = base_timestamp_;
    h.max_timestamp = max_timestamp_;
    h.producer_id = options_.producer_id;
    h.producer_epoch = options_.producer_epoch;
    h.base_sequence = options_.base_sequence;
    h.records_count = count_;
    write_batch_header(out.mutable_view(), h);
    store_u32(out.data() + batch_crc_offset, compute_batch_crc(out.view()));
    reset();
    return out;
}

result<byte_buffer> build_control_batch(control_record_type type, std::int64_t producer_id,
                                        std::int16_t producer_epoch, std::int32_t coordinator_epoch,
                                        std::int64_t timestamp_ms) {
    batch_options o;
    o.producer_id = producer_id;
    o.producer_epoch = producer_epoch;
    o.transactional = true;
    o.control = true;
    std::array<std::byte, control_key_size> key{};
    std::array<std::byte, end_txn_marker_value_size> value{};
    encode_control_key(key.data(), type);
    encode_end_txn_marker_value(value.data(), coordinator_epoch);
    record_batch_builder b(o);
    b.add(bytes_view(key), bytes_view(value), timestamp_ms);
    return b.finish();
}

}  // namespace sluice::protocol::kafka
