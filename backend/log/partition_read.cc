// partition_log's read side: reads by offset (whole batches, file regions), lookups by
// timestamp, the largest timestamp, and replay for state loaders.
#include <algorithm>
#include <array>

#include "backend/io/file.h"
#include "backend/log/partition_log.h"
#include "backend/logger.h"
#include "protocol/kafka/compression.h"
#include "protocol/kafka/record.h"

namespace sluice::backend::log {

namespace kafka = protocol::kafka;

namespace {

// Records for [pos, pos+len) of `f`: a file region when the file is a real one, else a copy.
result<kafka::records> make_records(const std::shared_ptr<io::file>& f, std::uint64_t pos,
                                    std::uint64_t len) {
    if (f->native_handle() >= 0) {
        return kafka::records(
            protocol::file_region{f, f->native_handle(), pos, static_cast<std::uint32_t>(len)});
    }
    auto buf = std::make_shared<protocol::byte_buffer>(static_cast<std::size_t>(len));
    buf->resize(static_cast<std::size_t>(len));
    auto n = f->read_at(buf->mutable_view(), pos);
    if (!n) {
        return fail(n.error());
    }
    if (*n != len) {
        return fail(errc::segment_corrupt);
    }
    protocol::bytes_view view = buf->view();
    return kafka::records(protocol::shared_bytes{std::move(buf), view});
}

// The first record of the batch at `pos` (of `size` bytes) with offset >= min_offset that
// `match` accepts: its timestamp and offset. nullopt when none does or the batch cannot be read.
template <typename Match>
std::optional<timestamp_and_offset> find_record(io::file& f, std::uint64_t pos, std::uint64_t size,
                                                std::int64_t min_offset, Match match) {
    std::vector<std::byte> bytes(static_cast<std::size_t>(size));
    auto n = f.read_at(bytes, pos);
    if (!n || *n != bytes.size()) {
        return std::nullopt;
    }
    auto it = kafka::record_iterator::open(bytes, kafka::default_max_decompressed_bytes);
    if (!it) {
        return std::nullopt;
    }
    kafka::record_view r;
    while (it->next(r)) {
        if (r.offset >= min_offset && match(r)) {
            return timestamp_and_offset{r.timestamp, offset(r.offset)};
        }
    }
    return std::nullopt;
}

}  // namespace

namespace {
// A segment deleted (retention, compaction) while a reader used it: read again.
bool any_deleted(const std::vector<std::shared_ptr<segment>>& used) {
    return std::any_of(used.begin(), used.end(), [](const auto& s) { return s->deleted.load(); });
}
constexpr int read_attempts = 8;
}  // namespace

result<read_result> partition_log::read(offset from, std::size_t max_bytes,
                                        const read_options& opts) {
    std::vector<std::shared_ptr<segment>> used;
    for (int attempt = 1;; ++attempt) {
        used.clear();
        auto r = read_attempt(from, max_bytes, opts, used);
        if (attempt == read_attempts || !any_deleted(used)) {
            return r;
        }
    }
}

result<timestamp_and_offset> partition_log::lookup_timestamp(std::int64_t ts_ms) {
    std::vector<std::shared_ptr<segment>> used;
    for (int attempt = 1;; ++attempt) {
        used.clear();
        auto r = lookup_attempt(ts_ms, used);
        if (attempt == read_attempts || !any_deleted(used)) {
            return r;
        }
    }
}

void partition_log::report_corruption(segment& seg, std::uint64_t at, const char* reason) {
    std::int64_t expected = -1;
    if (seg.corrupt_at.compare_exchange_strong(expected, static_cast<std::int64_t>(at))) {
        storage_log().error("{}-{}: segment {} is corrupt at byte {} ({}); reads stop there",
                            topic_, id_.value, seg.base_offset().value, at, reason);
    }
}

result<partition_log::segment_read> partition_log::read_segment(const std::shared_ptr<segment>& seg,
                                                                std::uint64_t size, offset from,
                                                                offset limit, std::size_t max_bytes,
                                                                const read_options& opts) {
    segment_read out;
    std::uint64_t end = size;
    std::int64_t bad = seg->corrupt_at.load();
    const bool capped = bad >= 0 && static_cast<std::uint64_t>(bad) < end;
    if (capped) {
        end = static_cast<std::uint64_t>(bad);
    }
    auto f = seg->log_file().get();
    if (!f) {
        return fail(map_io_error(f.error(), "opening a segment for reading"));
    }
    std::uint64_t start_pos = 0;
    offset min_next = seg->base_offset();
    auto e = seg->offset_index().floor(from.value, false);
    if (!e) {
        return fail(map_io_error(e.error(), "reading an offset index"));
    }
    if (seg->offset_index().damaged()) {
        note_index_damage(seg);
    }
    if (*e) {
        start_pos = static_cast<std::uint64_t>((*e)->value);
        min_next = offset((*e)->key);
    }
    // Whole batches from the one holding `from`, while they fit max_bytes.
    batch_scanner scan(**f, start_pos, end, opts.verify_crc, min_next);
    batch_scanner::item it;
    std::optional<std::uint64_t> first;
    std::uint64_t total = 0;
    std::uint64_t records = 0;
    while (true) {
        auto o = scan.next(it);
        if (!o) {
            return fail(map_io_error(o.error(), "reading a segment"));
        }
        if (*o == batch_scanner::outcome::end) {
            break;
        }
        if (*o != batch_scanner::outcome::batch) {
            report_corruption(*seg, scan.position(), scan.reason());
            if (!first) {
                return fail(errc::segment_corrupt);
            }
            break;
        }
        if (it.header.last_offset() < from.value) {
            continue;
        }
        if (it.header.base_offset >= limit.value) {
            out.stop = true;
            break;
        }
        const std::uint64_t batch = it.header.total_size();
        if (!first) {
            if (batch > max_bytes && !opts.min_one_batch) {
                out.stop = true;
                break;
            }
            first = it.position;
        } else if (total + batch > max_bytes) {
            break;
        }
        total += batch;
        records += static_cast<std::uint64_t>(std::max(it.header.records_count, 0));
        if (total >= max_bytes) {
            break;
        }
    }
    if (!first) {
        if (capped && !out.stop) {
            return fail(errc::segment_corrupt);  // what follows `from` here is unreadable
        }
        return out;
    }
    if (opts.verify_crc || !seg->is_verified(*first, *first + total)) {
        // Not yet checked in this process: check before serving, so corruption inside a segment
        // is reported instead of handed to clients.
        batch_scanner check(**f, *first, *first + total, true, offset(0));
        batch_scanner::item c;
        std::uint64_t good = *first;
        std::uint64_t good_records = 0;
        while (true) {
            auto o = check.next(c);
            if (!o) {
                return fail(map_io_error(o.error(), "reading a segment"));
            }
            if (*o != batch_scanner::outcome::batch) {
                break;
            }
            good = check.position();
            good_records += static_cast<std::uint64_t>(std::max(c.header.records_count, 0));
        }
        if (good < *first + total) {
            report_corruption(*seg, good, check.reason());
            if (good == *first) {
                return fail(errc::segment_corrupt);
            }
            total = good - *first;
            records = good_records;
        } else {
            seg->mark_verified(*first, *first + total);
        }
    }
    auto recs = make_records(*f, *first, total);
    if (!recs) {
        return fail(map_io_error(recs.error(), "reading a segment"));
    }
    out.records = std::move(*recs);
    out.record_count = records;
    out.found = true;
    return out;
}

result<read_result> partition_log::read_attempt(offset from, std::size_t max_bytes,
                                                const read_options& opts,
                                                std::vector<std::shared_ptr<segment>>& used) {
    read_result out;
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            return fail(errc::log_closed);
        }
        out.high_watermark = log_end_;
        out.compaction_generation = compaction_generation_;
        out.log_start_offset = log_start_;
        out.log_end_offset = log_end_;
        if (from < log_start_ || from > log_end_) {
            return fail(errc::offset_out_of_range);
        }
    }
    out.records = kafka::records::empty();
    offset limit = out.high_watermark;
    if (opts.max_offset && *opts.max_offset < limit) {
        limit = *opts.max_offset;
    }
    if (from >= limit) {
        return out;
    }
    // Usually the segment holding `from` answers; later ones serve offsets that compaction
    // removed from the end of a segment.
    std::size_t next = 0;
    bool first_lookup = true;
    while (true) {
        std::shared_ptr<segment> seg;
        std::uint64_t size = 0;
        {
            std::lock_guard lock(mu_);
            if (first_lookup) {
                next = find_segment_locked(from);
                first_lookup = false;
            } else if (!used.empty()) {
                // The list may have changed (retention, compaction): continue after the last
                // segment looked at, by base offset.
                offset last = used.back()->base_offset();
                next = static_cast<std::size_t>(
                    std::upper_bound(segments_.begin(), segments_.end(), last,
                                     [](offset v, const std::shared_ptr<segment>& s) {
                                         return v < s->base_offset();
                                     }) -
                    segments_.begin());
            }
            if (next >= segments_.size()) {
                return out;
            }
            seg = segments_[next];
            size = seg->size;
        }
        used.push_back(seg);
        auto r = read_segment(seg, size, from, limit, max_bytes, opts);
        if (!r) {
            return fail(r.error());
        }
        if (r->found) {
            out.records = std::move(r->records);
            out.record_count = r->record_count;
            return out;
        }
        if (r->stop) {
            return out;
        }
    }
}

result<timestamp_and_offset> partition_log::lookup_attempt(
    std::int64_t ts_ms, std::vector<std::shared_ptr<segment>>& used) {
    struct snapshot {
        std::shared_ptr<segment> seg;
        std::uint64_t size;
    };
    std::vector<snapshot> segs;
    offset start{0};
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            return fail(errc::log_closed);
        }
        start = log_start_;
        for (const auto& s : segments_) {
            if (s->max_timestamp >= ts_ms && s->next_offset > log_start_) {
                segs.push_back({s, s->size});
                used.push_back(s);
            }
        }
    }
    for (auto& s : segs) {
        auto f = s.seg->log_file().get();
        if (!f) {
            return fail(map_io_error(f.error(), "opening a segment for reading"));
        }
        std::uint64_t pos = 0;
        offset min_next = s.seg->base_offset();
        auto t = s.seg->time_index().floor(ts_ms, true);
        if (!t) {
            return fail(map_io_error(t.error(), "reading a time index"));
        }
        if (s.seg->time_index().damaged()) {
            note_index_damage(s.seg);
        }
        if (*t) {
            auto o = s.seg->offset_index().floor((*t)->value, false);
            if (!o) {
                return fail(map_io_error(o.error(), "reading an offset index"));
            }
            if (*o) {
                pos = static_cast<std::uint64_t>((*o)->value);
                min_next = offset((*o)->key);
            }
            if (s.seg->offset_index().damaged()) {
                note_index_damage(s.seg);
            }
        }
        std::uint64_t end = s.size;
        std::int64_t bad = s.seg->corrupt_at.load();
        if (bad >= 0 && static_cast<std::uint64_t>(bad) < end) {
            end = static_cast<std::uint64_t>(bad);
        }
        batch_scanner scan(**f, pos, end, false, min_next);
        batch_scanner::item it;
        while (true) {
            auto o = scan.next(it);
            if (!o) {
                return fail(map_io_error(o.error(), "reading a segment"));
            }
            if (*o != batch_scanner::outcome::batch) {
                break;
            }
            if (it.header.max_timestamp >= ts_ms && it.header.last_offset() >= start.value) {
                // compat: Kafka answers with the first record (not batch) at or after the time.
                auto rec =
                    find_record(**f, it.position, it.header.total_size(), start.value,
                                [&](const kafka::record_view& r) { return r.timestamp >= ts_ms; });
                if (rec) {
                    return *rec;
                }
                return timestamp_and_offset{it.header.max_timestamp,
                                            std::max(offset(it.header.base_offset), start)};
            }
        }
    }
    return timestamp_and_offset{};
}

result<offset> partition_log::offset_for_timestamp(std::int64_t ts_ms) {
    auto r = lookup_timestamp(ts_ms);
    if (!r) {
        return fail(r.error());
    }
    return r->off;
}

timestamp_and_offset partition_log::max_timestamp() const {
    timestamp_and_offset best;
    std::shared_ptr<segment> holder;
    std::uint64_t size = 0;
    {
        std::lock_guard lock(mu_);
        for (const auto& s : segments_) {
            if (s->max_timestamp > best.timestamp) {
                best = {s->max_timestamp, s->max_timestamp_offset};
                holder = s;
                size = s->size;
            }
        }
    }
    if (!holder) {
        return best;
    }
    // compat: KIP-734 names the record holding the largest timestamp, not its batch: find the
    // batch (index, then headers) and the record in it. The batch's offset on any failure.
    auto f = holder->log_file().get();
    if (!f) {
        return best;
    }
    std::uint64_t pos = 0;
    offset min_next = holder->base_offset();
    if (auto e = holder->offset_index().floor(best.off.value, false); e && *e) {
        pos = static_cast<std::uint64_t>((*e)->value);
        min_next = offset((*e)->key);
    }
    batch_scanner scan(**f, pos, size, false, min_next);
    batch_scanner::item it;
    while (true) {
        auto o = scan.next(it);
        if (!o || *o != batch_scanner::outcome::batch) {
            return best;
        }
        if (it.header.base_offset == best.off.value) {
            auto rec = find_record(
                **f, it.position, it.header.total_size(), 0,
                [&](const kafka::record_view& r) { return r.timestamp == best.timestamp; });
            return rec ? *rec : best;
        }
        if (it.header.base_offset > best.off.value) {
            return best;
        }
    }
}

result<offset> partition_log::replay(offset from,
                                     const std::function<bool(protocol::bytes_view)>& fn) {
    offset pos = from;
    while (true) {
        offset start = log_start_offset();
        if (pos < start) {
            pos = start;
        }
        auto r = read(pos, 1 << 20, read_options{});
        if (!r) {
            return fail(r.error());
        }
        if (r->records.size() == 0) {
            return pos;
        }
        protocol::byte_buffer bytes(r->records.size());
        for (const auto& c : r->records.chunks()) {
            if (const auto* m = std::get_if<protocol::shared_bytes>(&c)) {
                bytes.append(m->data);
            } else {
                const auto& region = std::get<protocol::file_region>(c);
                auto file = std::const_pointer_cast<io::file>(
                    std::static_pointer_cast<const io::file>(region.owner));
                std::byte* dst = bytes.grow(region.length);
                auto n = file->read_at(std::span<std::byte>(dst, region.length), region.position);
                if (!n || *n != region.length) {
                    return fail(errc::storage_error);
                }
            }
        }
        kafka::batch_cursor cursor(bytes.view());
        while (true) {
            auto b = cursor.next();
            if (b.empty()) {
                break;
            }
            auto h = kafka::read_batch_header(b);
            if (!h) {
                return fail(errc::segment_corrupt);
            }
            offset next(h->last_offset() + 1);
            if (next <= pos) {
                continue;
            }
            if (!fn(b)) {
                return next;
            }
            pos = next;
        }
    }
}

result<std::optional<kafka::batch_header>> partition_log::batch_header_at(offset o) {
    using found = std::optional<kafka::batch_header>;
    read_options opts;
    opts.min_one_batch = true;
    auto r = read(o, 1, opts);
    if (!r) {
        if (r.error() == errc::offset_out_of_range) {
            return found();
        }
        return fail(r.error());
    }
    if (r->records.size() < kafka::batch_header_size) {
        return found();
    }
    std::array<std::byte, kafka::batch_header_size> head{};
    const auto& c = r->records.chunks().front();
    if (const auto* m = std::get_if<protocol::shared_bytes>(&c)) {
        if (m->data.size() < head.size()) {
            return found();
        }
        std::copy_n(m->data.begin(), head.size(), head.begin());
    } else {
        const auto& region = std::get<protocol::file_region>(c);
        if (region.length < head.size()) {
            return found();
        }
        auto file = std::const_pointer_cast<io::file>(
            std::static_pointer_cast<const io::file>(region.owner));
        auto n = file->read_at(head, region.position);
        if (!n || *n != head.size()) {
            return fail(errc::storage_error);
        }
    }
    auto h = kafka::read_batch_header(head);
    if (!h || h->base_offset != o.value) {
        return found();
    }
    return found(*h);
}

std::uint64_t partition_log::compaction_generation() const {
    std::lock_guard lock(mu_);
    return compaction_generation_;
}

std::size_t partition_log::removed_markers(std::size_t from,
                                           std::vector<removed_marker>& out) const {
    std::lock_guard lock(mu_);
    for (std::size_t i = from; i < removed_markers_.size(); ++i) {
        out.push_back(removed_markers_[i]);
    }
    return removed_markers_.size();
}

}  // namespace sluice::backend::log
