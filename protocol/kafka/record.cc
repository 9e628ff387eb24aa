#include "protocol/kafka/record.h"

#include "protocol/core/errc.h"
#include "protocol/core/varint.h"
#include "protocol/core/wrapping.h"
#include "protocol/kafka/compression.h"

namespace sluice::protocol::kafka {
namespace {

/// The smallest possible record: length, attributes, timestamp delta, offset delta, key
/// length, value length and header count, one byte each.
constexpr std::size_t min_record_size = 7;

/// Reads a varint length field (-1 = null) and the bytes it covers.
std::optional<bytes_view> nullable_field(reader& r) {
    std::int32_t n = r.varint();
    if (n < -1) {
        r.fail(errc::invalid_length);
        return std::nullopt;
    }
    if (n == -1 || !r.ok()) {
        return std::nullopt;
    }
    if (static_cast<std::size_t>(n) > r.remaining()) {
        r.fail(errc::truncated);
        return std::nullopt;
    }
    return r.take(static_cast<std::size_t>(n));
}

/// Checks the encoded headers at the reader and skips them.
void check_headers(reader& r, std::int32_t count) {
    for (std::int32_t i = 0; i < count && r.ok(); ++i) {
        std::int32_t klen = r.varint();
        if (klen < 0) {  // a header key is never null
            r.fail(errc::invalid_length);
            return;
        }
        if (static_cast<std::size_t>(klen) > r.remaining()) {
            r.fail(errc::truncated);
            return;
        }
        r.skip(static_cast<std::size_t>(klen));
        (void)nullable_field(r);
    }
}

record_view resolve(record_view rec, const batch_header& h) {
    rec.offset = wrapping_add(h.base_offset, rec.offset_delta);
    rec.timestamp = h.uses_log_append_time() ? h.max_timestamp
                                             : wrapping_add(h.base_timestamp, rec.timestamp_delta);
    return rec;
}

}  // namespace

void header_range::iterator::load() {
    if (left_ == 0) {
        return;
    }
    // The bytes were checked by decode_record: no read here can fail.
    reader r(bytes_view(pos_, static_cast<std::size_t>(end_ - pos_)));
    std::int32_t klen = r.varint();
    current_.key = as_chars(r.take(static_cast<std::size_t>(klen)));
    std::int32_t vlen = r.varint();
    if (vlen < 0) {
        current_.value.reset();
    } else {
        current_.value = r.take(static_cast<std::size_t>(vlen));
    }
    pos_ += r.position();
}

result<record_view> decode_record(bytes_view data, const batch_header& header,
                                  std::size_t& consumed) {
    reader outer(data);
    std::int32_t length = outer.varint();
    if (!outer.ok()) {
        return fail(outer.error());
    }
    if (length < 0) {
        return fail(errc::invalid_length);
    }
    if (static_cast<std::size_t>(length) > outer.remaining()) {
        return fail(errc::truncated);
    }
    std::size_t prefix = outer.position();
    reader r(outer.take(static_cast<std::size_t>(length)));

    record_view rec;
    rec.attributes = r.i8();
    rec.timestamp_delta = r.varlong();
    rec.offset_delta = r.varint();
    rec.key = nullable_field(r);
    rec.value = nullable_field(r);
    std::int32_t count = r.varint();
    if (r.ok() && count < 0) {
        r.fail(errc::invalid_length);
    }
    // Each header takes at least two bytes (two length varints).
    if (r.ok() && static_cast<std::size_t>(count) > r.remaining() / 2) {
        r.fail(errc::invalid_length);
    }
    std::size_t headers_at = r.position();
    check_headers(r, count);
    if (!r.ok()) {
        return fail(r.error());
    }
    if (r.remaining() != 0) {
        // Kafka: "Invalid record size: expected to read N bytes in record payload".
        return fail(errc::invalid_length);
    }
    bytes_view body = data.subspan(prefix, static_cast<std::size_t>(length));
    rec.headers = header_range(body.subspan(headers_at, r.position() - headers_at),
                               static_cast<std::uint32_t>(count));
    consumed = prefix + static_cast<std::size_t>(length);
    rec.encoded = data.first(consumed);
    return resolve(rec, header);
}

// --- record_iterator ---------------------------------------------------------------------

result<record_iterator> record_iterator::open(bytes_view batch, std::size_t max_decompressed) {
    auto h = read_batch_header(batch);
    if (!h) {
        return fail(h.error());
    }
    if (h->magic != current_magic) {
        return fail(errc::invalid_value);
    }
    if (h->batch_length < static_cast<std::int32_t>(batch_header_size - batch_log_overhead) ||
        h->total_size() != batch.size()) {
        return fail(errc::invalid_length);
    }
    if (h->records_count < 0) {
        return fail(errc::invalid_value);
    }
    if (h->codec() > compression::zstd) {
        return fail(errc::unsupported_compression);
    }
    record_iterator it;
    it.header_ = *h;
    bytes_view body = batch.subspan(batch_header_size);
    if (h->codec() == compression::none) {
        it.records_ = body;
    } else if (h->records_count > 0 || !body.empty()) {
        auto d = decompress(h->codec(), body, it.decompressed_, max_decompressed);
        if (!d) {
            return fail(d.error());
        }
        it.records_ = it.decompressed_.view();
    }
    if (static_cast<std::uint64_t>(h->records_count) > it.records_.size() / min_record_size) {
        return fail(errc::invalid_length);  // more records claimed than the bytes can hold
    }
    return it;
}

bool record_iterator::next(record_view& out) {
    if (error_) {
        return false;
    }
    if (read_ == header_.records_count) {
        if (pos_ != records_.size()) {
            error_ = make_error_code(errc::trailing_bytes);
        }
        return false;
    }
    if (pos_ >= records_.size()) {
        error_ = make_error_code(errc::truncated);  // fewer records than records_count
        return false;
    }
    std::size_t consumed = 0;
    auto rec = decode_record(records_.subspan(pos_), header_, consumed);
    if (!rec) {
        error_ = rec.error();
        return false;
    }
    out = *rec;
    pos_ += consumed;
    ++read_;
    return true;
}

// --- whole-batch helpers -----------------------------------------------------------------

result<decoded_batch> decode_batch(bytes_view batch, std::size_t max_decompressed) {
    auto valid = validate_batch(batch);
    if (!valid) {
        return fail(valid.error());
    }
    auto it = record_iterator::open(batch, max_decompressed);
    if (!it) {
        return fail(it.error());
    }
    decoded_batch out;
    out.header = it->header();
    // open() bounded records_count by the bytes, so this reservation is bounded too.
    out.records.reserve(static_cast<std::size_t>(it->header().records_count));
    record_view rec;
    while (it->next(rec)) {
        out.records.push_back(rec);
    }
    if (it->error()) {
        return fail(it->error());
    }
    // The views point into the iterator's buffer; moving it keeps its heap block in place.
    out.storage = std::move(it->decompressed_);
    return out;
}

result<record_summary> summarize_records(bytes_view batch, std::size_t max_decompressed) {
    auto it = record_iterator::open(batch, max_decompressed);
    if (!it) {
        return fail(it.error());
    }
    const batch_header& h = it->header();
    record_summary s;
    s.uncompressed_bytes = it->records_bytes().size();
    record_view rec;
    while (it->next(rec)) {
        if (rec.offset_delta != s.count) {
            s.offsets_consecutive = false;
        }
        if (!rec.key) {
            s.has_null_key = true;
            s.null_key_indexes.push_back(s.count);
        }
        std::int64_t ts = wrapping_add(h.base_timestamp, rec.timestamp_delta);
        if (ts > s.max_timestamp) {
            s.max_timestamp = ts;
        }
        ++s.count;
    }
    if (it->error()) {
        return fail(it->error());
    }
    if (h.last_offset_delta != (s.count == 0 ? 0 : s.count - 1)) {
        s.offsets_consecutive = false;
    }
    return s;
}

// --- control records ---------------------------------------------------------------------

result<control_record_key> decode_control_key(std::optional<bytes_view> key) {
    if (!key) {
        return fail(errc::invalid_length);
    }
    if (key->size() < control_key_size) {
        return fail(errc::truncated);
    }
    control_record_key k;
    k.version = load_i16(key->data());
    k.type = load_i16(key->data() + 2);
    if (k.version < 0) {
        return fail(errc::invalid_value);
    }
    return k;
}

result<end_txn_marker> decode_end_txn_marker(const record_view& record) {
    auto key = decode_control_key(record.key);
    if (!key) {
        return fail(key.error());
    }
    if (key->type != static_cast<std::int16_t>(control_record_type::abort) &&
        key->type != static_cast<std::int16_t>(control_record_type::commit)) {
        return fail(errc::invalid_value);
    }
    if (!record.value) {
        return fail(errc::invalid_length);
    }
    if (record.value->size() < end_txn_marker_value_size) {
        return fail(errc::truncated);
    }
    if (load_i16(record.value->data()) < 0) {
        return fail(errc::invalid_value);  // value version
    }
    end_txn_marker m;
    m.type = static_cast<control_record_type>(key->type);
    m.coordinator_epoch = load_i32(record.value->data() + 2);
    return m;
}

void encode_control_key(std::byte* out, control_record_type type) {
    store_i16(out, 0);
    store_i16(out + 2, static_cast<std::int16_t>(type));
}

void encode_end_txn_marker_value(std::byte* out, std::int32_t coordinator_epoch) {
    store_i16(out, 0);
    store_i32(out + 2, coordinator_epoch);
}

}  // namespace sluice::protocol::kafka
