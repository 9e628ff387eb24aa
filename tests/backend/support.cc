#include "tests/backend/support.h"

#include <cstring>
#include <stdexcept>

#include "backend/io/file.h"
#include "protocol/core/crc32c.h"
#include "protocol/core/varint.h"
#include "protocol/kafka/record_batch.h"

namespace sluice::backend::test {

namespace kafka = protocol::kafka;

namespace {

void put_varlong(std::vector<std::byte>& out, std::int64_t v) {
    std::byte tmp[10];
    std::size_t n = protocol::put_uvarint(tmp, protocol::zigzag64(v));
    out.insert(out.end(), tmp, tmp + n);
}

void put_bytes(std::vector<std::byte>& out, const std::optional<std::string>& s) {
    if (!s) {
        put_varlong(out, -1);
        return;
    }
    put_varlong(out, static_cast<std::int64_t>(s->size()));
    auto b = protocol::as_bytes(*s);
    out.insert(out.end(), b.begin(), b.end());
}

std::int64_t get_varlong(const std::byte*& p, const std::byte* end) {
    std::uint64_t v = 0;
    std::size_t n = protocol::get_uvarint(p, end, v, 10);
    if (n == 0) {
        throw std::runtime_error("bad varint in test batch");
    }
    p += n;
    return protocol::unzigzag64(v);
}

}  // namespace

std::vector<std::byte> make_batch(const std::vector<test_record>& records,
                                  std::int64_t producer_id) {
    std::vector<std::byte> body;
    const std::int64_t base_ts = records.empty() ? -1 : records.front().timestamp;
    std::int64_t max_ts = -1;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const auto& r = records[i];
        std::vector<std::byte> rec;
        rec.push_back(std::byte{0});
        put_varlong(rec, r.timestamp - base_ts);
        put_varlong(rec, static_cast<std::int64_t>(i));
        put_bytes(rec, r.key);
        put_bytes(rec, r.value);
        put_varlong(rec, 0);
        put_varlong(body, static_cast<std::int64_t>(rec.size()));
        body.insert(body.end(), rec.begin(), rec.end());
        max_ts = std::max(max_ts, r.timestamp);
    }
    std::vector<std::byte> out(kafka::batch_header_size + body.size());
    kafka::batch_header h;
    h.base_offset = 0;
    h.batch_length = static_cast<std::int32_t>(out.size() - kafka::batch_log_overhead);
    h.partition_leader_epoch = -1;
    h.attributes = 0;
    h.last_offset_delta = static_cast<std::int32_t>(records.size()) - 1;
    h.base_timestamp = base_ts;
    h.max_timestamp = max_ts;
    h.producer_id = producer_id;
    h.producer_epoch = producer_id >= 0 ? 0 : -1;
    h.base_sequence = producer_id >= 0 ? 0 : -1;
    h.records_count = static_cast<std::int32_t>(records.size());
    std::memcpy(out.data() + kafka::batch_header_size, body.data(), body.size());
    kafka::write_batch_header(out, h);
    protocol::store_u32(out.data() + kafka::batch_crc_offset, kafka::compute_batch_crc(out));
    return out;
}

std::vector<std::byte> make_batch(int count, std::size_t value_size, std::int64_t ts, char fill) {
    std::vector<test_record> recs;
    for (int i = 0; i < count; ++i) {
        recs.push_back({std::nullopt, std::string(value_size, fill), ts});
    }
    return make_batch(recs);
}

std::vector<test_record> decode_records(protocol::bytes_view batch) {
    auto h = kafka::read_batch_header(batch);
    if (!h) {
        throw std::runtime_error("bad batch header");
    }
    std::vector<test_record> out;
    const std::byte* p = batch.data() + kafka::batch_header_size;
    const std::byte* end = batch.data() + batch.size();
    for (std::int32_t i = 0; i < h->records_count; ++i) {
        std::int64_t len = get_varlong(p, end);
        const std::byte* rec_end = p + len;
        ++p;  // attributes
        std::int64_t ts_delta = get_varlong(p, rec_end);
        (void)get_varlong(p, rec_end);  // offset delta
        test_record r;
        r.timestamp = h->base_timestamp + ts_delta;
        std::int64_t klen = get_varlong(p, rec_end);
        if (klen >= 0) {
            r.key = std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(klen));
            p += klen;
        }
        std::int64_t vlen = get_varlong(p, rec_end);
        if (vlen >= 0) {
            r.value = std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(vlen));
            p += vlen;
        }
        p = rec_end;
        out.push_back(std::move(r));
    }
    return out;
}

std::vector<std::int64_t> record_offsets(protocol::bytes_view batch) {
    auto h = kafka::read_batch_header(batch);
    std::vector<std::int64_t> out;
    const std::byte* p = batch.data() + kafka::batch_header_size;
    const std::byte* end = batch.data() + batch.size();
    for (std::int32_t i = 0; i < h->records_count; ++i) {
        std::int64_t len = get_varlong(p, end);
        const std::byte* rec_end = p + len;
        ++p;
        (void)get_varlong(p, rec_end);
        out.push_back(h->base_offset + get_varlong(p, rec_end));
        p = rec_end;
    }
    return out;
}

std::vector<std::byte> flatten(const protocol::kafka::records& r) {
    std::vector<std::byte> out;
    for (const auto& c : r.chunks()) {
        if (const auto* m = std::get_if<protocol::shared_bytes>(&c)) {
            out.insert(out.end(), m->data.begin(), m->data.end());
        } else {
            const auto& region = std::get<protocol::file_region>(c);
            auto file = std::const_pointer_cast<io::file>(
                std::static_pointer_cast<const io::file>(region.owner));
            std::vector<std::byte> buf(region.length);
            auto n = file->read_at(buf, region.position);
            if (!n || *n != buf.size()) {
                throw std::runtime_error("short read of a file region");
            }
            out.insert(out.end(), buf.begin(), buf.end());
        }
    }
    return out;
}

std::vector<protocol::bytes_view> split_batches(protocol::bytes_view bytes) {
    std::vector<protocol::bytes_view> out;
    kafka::batch_cursor c(bytes);
    while (true) {
        auto b = c.next();
        if (b.empty()) {
            break;
        }
        out.push_back(b);
    }
    return out;
}

result<log::append_result> append_durably(log::partition_log& p, std::vector<std::byte> batch,
                                          std::int64_t now_ms) {
    log::append_options opts;
    opts.now_ms = now_ms;
    auto r = p.append(batch, opts);
    if (!r) {
        return r;
    }
    auto flushed = run_until_done(p.flush_to(r->last_offset + 1));
    if (!flushed) {
        return fail(flushed.error());
    }
    return r;
}

}  // namespace sluice::backend::test
