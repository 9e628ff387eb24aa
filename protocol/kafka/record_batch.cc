#include "protocol/kafka/record_batch.h"

#include "protocol/core/crc32c.h"
#include "protocol/core/errc.h"

namespace sluice::protocol::kafka {

std::int32_t batch_header::last_sequence() const {
    if (base_sequence < 0) {
        return -1;
    }
    std::int64_t last = static_cast<std::int64_t>(base_sequence) + last_offset_delta;
    if (last > INT32_MAX) {
        last -= static_cast<std::int64_t>(INT32_MAX) + 1;
    }
    return static_cast<std::int32_t>(last);
}

result<batch_header> read_batch_header(bytes_view data) {
    if (data.size() < batch_header_size) {
        return fail(errc::truncated);
    }
    const std::byte* p = data.data();
    batch_header h;
    h.base_offset = load_i64(p);
    h.batch_length = load_i32(p + 8);
    h.partition_leader_epoch = load_i32(p + 12);
    h.magic = static_cast<std::int8_t>(p[16]);
    h.crc = load_u32(p + 17);
    h.attributes = load_i16(p + 21);
    h.last_offset_delta = load_i32(p + 23);
    h.base_timestamp = load_i64(p + 27);
    h.max_timestamp = load_i64(p + 35);
    h.producer_id = load_i64(p + 43);
    h.producer_epoch = load_i16(p + 51);
    h.base_sequence = load_i32(p + 53);
    h.records_count = load_i32(p + 57);
    return h;
}

int magic_of(bytes_view data) {
    if (data.size() < 17) {
        return -1;
    }
    return static_cast<int>(static_cast<std::int8_t>(data[16]));
}

result<batch_header> validate_batch(bytes_view data) {
    auto h = read_batch_header(data);
    if (!h) {
        return h;
    }
    if (h->magic != current_magic) {
        return fail(errc::invalid_value);
    }
    if (h->batch_length < static_cast<std::int32_t>(batch_header_size - batch_log_overhead) ||
        h->total_size() != data.size()) {
        return fail(errc::invalid_length);
    }
    if (h->records_count < 0 || h->last_offset_delta < 0) {
        return fail(errc::invalid_value);
    }
    if (h->codec() > compression::zstd) {
        return fail(errc::unsupported_compression);
    }
    if (compute_batch_crc(data) != h->crc) {
        return fail(errc::crc_mismatch);
    }
    return h;
}

bytes_view batch_cursor::next() {
    if (malformed_ || pos_ >= data_.size()) {
        return {};
    }
    std::size_t left = data_.size() - pos_;
    if (left < batch_log_overhead) {
        truncated_ = true;
        return {};
    }
    std::int32_t len = load_i32(data_.data() + pos_ + 8);
    // 14 = the smallest legacy message after the length field; v2 batches need 49.
    if (len < 14) {
        malformed_ = true;
        return {};
    }
    std::size_t total = batch_log_overhead + static_cast<std::size_t>(len);
    if (total > left) {
        truncated_ = true;
        return {};
    }
    bytes_view b = data_.subspan(pos_, total);
    pos_ += total;
    return b;
}

std::uint32_t compute_batch_crc(bytes_view batch) {
    return crc32c(batch.subspan(batch_attributes_offset));
}

void set_base_offset(std::span<std::byte> batch, std::int64_t base_offset) {
    store_i64(batch.data(), base_offset);
}

void set_partition_leader_epoch(std::span<std::byte> batch, std::int32_t epoch) {
    store_i32(batch.data() + 12, epoch);
}

void set_log_append_time(std::span<std::byte> batch, std::int64_t timestamp_ms) {
    std::int16_t attrs = load_i16(batch.data() + 21);
    store_i16(batch.data() + 21, static_cast<std::int16_t>(attrs | batch_attr::log_append_time));
    store_i64(batch.data() + 27, timestamp_ms);
    store_i64(batch.data() + 35, timestamp_ms);
    store_u32(batch.data() + batch_crc_offset, compute_batch_crc(batch));
}

void write_batch_header(std::span<std::byte> batch, const batch_header& h) {
    std::byte* p = batch.data();
    store_i64(p, h.base_offset);
    store_i32(p + 8, h.batch_length);
    store_i32(p + 12, h.partition_leader_epoch);
    p[16] = static_cast<std::byte>(h.magic);
    store_u32(p + 17, h.crc);
    store_i16(p + 21, h.attributes);
    store_i32(p + 23, h.last_offset_delta);
    store_i64(p + 27, h.base_timestamp);
    store_i64(p + 35, h.max_timestamp);
    store_i64(p + 43, h.producer_id);
    store_i16(p + 51, h.producer_epoch);
    store_i32(p + 53, h.base_sequence);
    store_i32(p + 57, h.records_count);
}

}  // namespace sluice::protocol::kafka
