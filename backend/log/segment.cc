#include "backend/log/segment.h"

#include <cstdio>

#include "backend/log/errc.h"

namespace sluice::backend::log {

namespace kafka = protocol::kafka;

namespace {
constexpr std::size_t scan_block = 64 * 1024;
constexpr std::int32_t min_batch_length =
    static_cast<std::int32_t>(kafka::batch_header_size - kafka::batch_log_overhead);
}  // namespace

segment::segment(std::shared_ptr<io::file_cache> cache, const std::string& dir, offset base)
    : next_offset(base),
      base_(base),
      log_(cache, io::join_path(dir, file_name(base, ".log")), io::open_mode::create),
      offsets_(index_kind::offset, base, cache, io::join_path(dir, file_name(base, ".index"))),
      times_(index_kind::time, base, cache, io::join_path(dir, file_name(base, ".timeindex"))) {}

std::string segment::file_name(offset base, std::string_view ext) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%020lld", static_cast<long long>(base.value));
    return std::string(buf) + std::string(ext);
}

void segment::index_batch(const kafka::batch_header& h, std::uint64_t position,
                          std::int32_t index_interval_bytes) {
    if (h.max_timestamp > max_timestamp) {
        max_timestamp = h.max_timestamp;
        max_timestamp_offset = offset(h.base_offset);
    }
    std::uint64_t since = has_index_entry ? position - last_index_position : position;
    if (since < static_cast<std::uint64_t>(index_interval_bytes)) {
        return;
    }
    offsets_.append({h.base_offset, static_cast<std::int64_t>(position)});
    has_index_entry = true;
    last_index_position = position;
    if (max_timestamp > last_time_entry) {
        times_.append({max_timestamp, max_timestamp_offset.value});
        last_time_entry = max_timestamp;
    }
}

bool segment::is_verified(std::uint64_t from, std::uint64_t to) const {
    std::lock_guard lock(verify_mu_);
    return from >= verified_lo_ && to <= verified_hi_;
}

void segment::mark_verified(std::uint64_t from, std::uint64_t to) {
    std::lock_guard lock(verify_mu_);
    if (from <= verified_hi_ && to >= verified_lo_) {
        verified_lo_ = std::min(verified_lo_, from);
        verified_hi_ = std::max(verified_hi_, to);
    } else if (to - from > verified_hi_ - verified_lo_) {
        verified_lo_ = from;
        verified_hi_ = to;
    }
}

index_header segment::sealed_header() const {
    index_header h;
    h.sealed = true;
    h.log_size = static_cast<std::uint32_t>(size);
    h.next_delta = static_cast<std::uint32_t>(next_offset - base_);
    h.max_timestamp = max_timestamp;
    h.max_ts_delta = max_timestamp_offset.value < 0
                         ? 0
                         : static_cast<std::uint32_t>(max_timestamp_offset - base_);
    return h;
}

void segment::reset_to(const sync_point& p) {
    size = p.size;
    next_offset = p.next_offset;
    max_timestamp = p.max_timestamp;
    max_timestamp_offset = p.max_timestamp_offset;
    auto last_offset_entry = offsets_.last();
    has_index_entry = last_offset_entry.has_value();
    last_index_position =
        last_offset_entry ? static_cast<std::uint64_t>(last_offset_entry->value) : 0;
    auto last_time = times_.last();
    last_time_entry = last_time ? last_time->key : -1;
}

result<void> rebuild_sealed_index(segment& seg, std::shared_ptr<io::file_cache> cache,
                                  const std::string& dir, const index_header& header,
                                  std::int32_t index_interval_bytes) {
    auto f = seg.log_file().get();
    if (!f) {
        return fail(f.error());
    }
    // A scratch segment accumulates the entries in memory exactly as appends would.
    segment scratch(std::move(cache), dir, seg.base_offset());
    batch_scanner scan(**f, 0, header.log_size, true, seg.base_offset());
    batch_scanner::item it;
    while (true) {
        auto o = scan.next(it);
        if (!o) {
            return fail(o.error());
        }
        if (*o != batch_scanner::outcome::batch) {
            break;
        }
        scratch.index_batch(it.header, it.position, index_interval_bytes);
    }
    auto offsets = scratch.offset_index().all();
    auto times = scratch.time_index().all();
    if (!offsets || !times) {
        return fail(errc::storage_error);
    }
    seg.offset_index().replace_all(std::move(*offsets));
    seg.time_index().replace_all(std::move(*times));
    if (auto r = seg.offset_index().write_sealed(header); !r) {
        return r;
    }
    return seg.time_index().write_sealed(header);
}

batch_scanner::batch_scanner(io::file& f, std::uint64_t start, std::uint64_t end, bool verify_crc,
                             offset min_next_offset)
    : file_(f), pos_(start), end_(end), verify_crc_(verify_crc), min_next_(min_next_offset) {}

result<bool> batch_scanner::fill(std::uint64_t pos, std::size_t need) {
    if (pos >= buf_pos_ && pos + need <= buf_pos_ + buf_len_) {
        return true;
    }
    std::size_t want = std::max(need, scan_block);
    want = static_cast<std::size_t>(std::min<std::uint64_t>(want, end_ - pos));
    if (want < need) {
        return false;
    }
    if (buf_.size() < want) {
        buf_.resize(want);
    }
    auto n = file_.read_at(std::span<std::byte>(buf_.data(), want), pos);
    if (!n) {
        return fail(n.error());
    }
    buf_pos_ = pos;
    buf_len_ = *n;
    return *n >= need;
}

result<batch_scanner::outcome> batch_scanner::next(item& out) {
    if (pos_ >= end_) {
        return outcome::end;
    }
    std::uint64_t left = end_ - pos_;
    if (left < kafka::batch_log_overhead) {
        reason_ = "a partial batch header";
        return outcome::truncated;
    }
    auto have = fill(pos_, kafka::batch_log_overhead);
    if (!have) {
        return fail(have.error());
    }
    if (!*have) {
        reason_ = "the file ends early";
        return outcome::truncated;
    }
    const std::byte* p = buf_.data() + (pos_ - buf_pos_);
    std::int32_t length = protocol::load_i32(p + 8);
    if (length < min_batch_length) {
        reason_ = length == 0 ? "zeroed bytes" : "a bad batch length";
        return outcome::corrupt;
    }
    std::uint64_t total = kafka::batch_log_overhead + static_cast<std::uint64_t>(length);
    if (total > left) {
        reason_ = "a batch that runs past the end";
        return outcome::truncated;
    }
    have = fill(pos_, verify_crc_ ? static_cast<std::size_t>(total) : kafka::batch_header_size);
    if (!have) {
        return fail(have.error());
    }
    if (!*have) {
        reason_ = "the file ends early";
        return outcome::truncated;
    }
    p = buf_.data() + (pos_ - buf_pos_);
    auto h = kafka::read_batch_header(protocol::bytes_view(p, kafka::batch_header_size));
    if (!h || h->magic != kafka::current_magic) {
        reason_ = "a bad magic byte";
        return outcome::corrupt;
    }
    if (h->last_offset_delta < 0 || h->base_offset < min_next_.value) {
        reason_ = "offsets out of order";
        return outcome::corrupt;
    }
    if (verify_crc_ && kafka::compute_batch_crc(
                           protocol::bytes_view(p, static_cast<std::size_t>(total))) != h->crc) {
        reason_ = "a CRC mismatch";
        return outcome::corrupt;
    }
    out.position = pos_;
    out.header = *h;
    last_ = verify_crc_ ? protocol::bytes_view(p, static_cast<std::size_t>(total))
                        : protocol::bytes_view{};
    pos_ += total;
    min_next_ = offset(h->last_offset() + 1);
    return outcome::batch;
}

}  // namespace sluice::backend::log
