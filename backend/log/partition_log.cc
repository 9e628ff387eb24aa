// partition_log: appends, reads, timestamps, waiters, delete_records and close. Recovery is in
// partition_recovery.cc, the flusher round in partition_sync.cc, retention and compaction in
// partition_cleanup.cc and compactor.cc.
#include "backend/log/partition_log.h"

#include <algorithm>
#include <limits>

#include "backend/io/file.h"
#include "backend/log/flusher.h"
#include "backend/logger.h"
#include "protocol/kafka/compression.h"
#include "protocol/kafka/record.h"

namespace sluice::backend::log {

namespace kafka = protocol::kafka;

namespace {

struct pending_batch {
    std::size_t at = 0;  // position within the request
    kafka::batch_header header;
};

// Records for [pos, pos+len) of `f`: a file region when the file is a real one, else a copy.
result<kafka::records> make_records(const std::shared_ptr<io::file>& f, std::uint64_t pos,
                                    std::uint64_t len) {
    if (f->native_handle() >= 0) {
        return kafka::records(protocol::file_region{f, f->native_handle(), pos,
                                                    static_cast<std::uint32_t>(len)});
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

partition_log::partition_log(std::shared_ptr<const log_env> env, std::string dir,
                             std::string topic, partition_id id,
                             std::shared_ptr<const topic_config> cfg)
    : env_(std::move(env)),
      dir_(std::move(dir)),
      topic_(std::move(topic)),
      id_(id),
      config_(std::move(cfg)) {}

partition_log::~partition_log() = default;

result<std::shared_ptr<partition_log>> partition_log::open(std::shared_ptr<const log_env> env,
                                                           std::string dir, std::string topic,
                                                           partition_id id,
                                                           std::shared_ptr<const topic_config> cfg,
                                                           bool clean_shutdown) {
    auto p = std::shared_ptr<partition_log>(
        new partition_log(std::move(env), std::move(dir), std::move(topic), id, std::move(cfg)));
    if (auto r = p->recover(clean_shutdown); !r) {
        return fail(r.error());
    }
    if (p->needs_sync()) {
        p->request_sync();
    }
    return p;
}

offset partition_log::log_start_offset() const {
    std::lock_guard lock(mu_);
    return log_start_;
}

offset partition_log::log_end_offset() const {
    std::lock_guard lock(mu_);
    return log_end_;
}

offset partition_log::high_watermark() const { return log_end_offset(); }

offset partition_log::flushed_offset() const {
    std::lock_guard lock(mu_);
    return flushed_;
}

std::int64_t partition_log::size_bytes() const {
    std::lock_guard lock(mu_);
    return size_bytes_;
}

bool partition_log::closed() const {
    std::lock_guard lock(mu_);
    return closed_;
}

std::shared_ptr<const topic_config> partition_log::config() const {
    std::lock_guard lock(mu_);
    return config_;
}

void partition_log::set_config(std::shared_ptr<const topic_config> cfg) {
    std::lock_guard lock(mu_);
    config_ = std::move(cfg);
}

std::vector<segment_info> partition_log::segments() const {
    std::lock_guard lock(mu_);
    std::vector<segment_info> out;
    out.reserve(segments_.size());
    for (const auto& s : segments_) {
        out.push_back({s->base_offset(), s->next_offset, s->size, s->max_timestamp, s->sealed});
    }
    return out;
}

std::size_t partition_log::find_segment_locked(offset o) const {
    auto it = std::upper_bound(segments_.begin(), segments_.end(), o,
                               [](offset v, const std::shared_ptr<segment>& s) {
                                   return v < s->base_offset();
                               });
    return it == segments_.begin() ? 0 : static_cast<std::size_t>(it - segments_.begin() - 1);
}

std::error_code partition_log::map_io_error(const std::error_code& ec, const char* what) const {
    storage_log().error("{}-{}: {} failed: {}", topic_, id_.value, what, ec.message());
    return make_error_code(io::is_disk_full(ec) ? errc::disk_full : errc::storage_error);
}

result<std::shared_ptr<segment>> partition_log::roll_locked(std::int64_t now_ms) {
    auto old = active_locked();
    auto fresh = std::make_shared<segment>(env_->files, dir_, old->next_offset);
    if (auto f = fresh->log_file().get(); !f) {
        return fail(map_io_error(f.error(), "creating a segment"));
    }
    old->sealed = true;
    segments_.push_back(fresh);
    storage_log().info("{}-{}: rolled segment {} ({} bytes, offsets {}..{}); new segment {}",
                       topic_, id_.value, old->base_offset().value, old->size,
                       old->base_offset().value, old->next_offset.value - 1,
                       fresh->base_offset().value);
    (void)now_ms;
    return fresh;
}

result<append_result> partition_log::append(std::span<std::byte> batches,
                                            const append_options& opts) {
    thread_local std::vector<pending_batch> pending;
    pending.clear();
    std::shared_ptr<const topic_config> cfg = config();

    // Validation outside the lock: sizes, magic, CRC.
    kafka::batch_cursor cursor(batches);
    std::int64_t records = 0;
    while (true) {
        auto b = cursor.next();
        if (b.empty()) {
            break;
        }
        auto h = kafka::validate_batch(b);
        if (!h) {
            return fail(errc::corrupt_message);
        }
        if (b.size() > static_cast<std::size_t>(cfg->max_message_bytes) ||
            b.size() > static_cast<std::size_t>(cfg->segment_bytes)) {
            return fail(errc::message_too_large);
        }
        if (h->records_count <= 0 || h->last_offset_delta != h->records_count - 1) {
            return fail(errc::invalid_record);
        }
        if (h->is_control() && !opts.allow_control_batches) {
            return fail(errc::invalid_record);
        }
        if (cfg->cleanup_compact && !h->is_control()) {
            // compat: Kafka's LogValidator refuses keyless records in compacted topics. Only
            // these topics pay for a look inside the batch (decompressing it if needed).
            auto summary = kafka::summarize_records(b, kafka::default_max_decompressed_bytes);
            if (!summary || summary->count != h->records_count) {
                return fail(errc::corrupt_message);
            }
            if (summary->has_null_key || !summary->offsets_consecutive) {
                return fail(errc::invalid_record);
            }
        }
        pending.push_back({static_cast<std::size_t>(b.data() - batches.data()), *h});
        records += h->records_count;
    }
    if (pending.empty() || cursor.truncated_tail() || cursor.malformed()) {
        return fail(errc::corrupt_message);
    }
    append_result out;
    if (cfg->message_timestamp_type == timestamp_type::log_append_time) {
        for (auto& p : pending) {
            auto b = batches.subspan(p.at, p.header.total_size());
            kafka::set_log_append_time(b, opts.now_ms);
            p.header.base_timestamp = p.header.max_timestamp = opts.now_ms;
        }
        out.log_append_time_ms = opts.now_ms;
    }

    std::vector<std::weak_ptr<data_waiter>> wake;
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            return fail(errc::log_closed);
        }
        // --- hook: idempotence and transaction checks, atomic with offset assignment ------
        if (opts.validator != nullptr) {
            std::size_t dups = 0;
            append_result dup;
            offset probe = log_end_;
            for (const auto& p : pending) {
                auto v = opts.validator->check(p.header, probe);
                if (!v) {
                    return fail(v.error());
                }
                if (*v) {
                    if (dups == 0) {
                        dup.base_offset = (*v)->base_offset;
                    }
                    dup.last_offset = (*v)->last_offset;
                    ++dups;
                } else {
                    probe = probe + (p.header.last_offset_delta + 1);
                }
            }
            if (dups == pending.size()) {
                dup.log_start_offset = log_start_;
                dup.duplicate = true;
                return dup;
            }
            if (dups > 0) {
                return fail(errc::invalid_record);
            }
        }

        auto active = active_locked();
        const std::uint64_t total = batches.size();
        bool roll = active->size > 0 &&
                    (active->size + total > static_cast<std::uint64_t>(cfg->segment_bytes) ||
                     (active->first_append_ms >= 0 &&
                      opts.now_ms - active->first_append_ms >= cfg->segment_ms) ||
                     (log_end_ - active->base_offset()) + records >
                         std::numeric_limits<std::int32_t>::max() ||
                     (active->offset_index().size() + 1) * 8 >
                         static_cast<std::size_t>(cfg->segment_index_bytes));
        if (roll) {
            auto fresh = roll_locked(opts.now_ms);
            if (!fresh) {
                return fail(fresh.error());
            }
            active = *fresh;
            request_sync();  // fsync and seal the old segment, whatever the policy
        }

        offset next = log_end_;
        for (auto& p : pending) {
            auto b = batches.subspan(p.at, p.header.total_size());
            kafka::set_base_offset(b, next.value);
            kafka::set_partition_leader_epoch(b, env_->leader_epoch);
            p.header.base_offset = next.value;
            p.header.partition_leader_epoch = env_->leader_epoch;
            next = next + (p.header.last_offset_delta + 1);
        }

        auto f = active->log_file().get();
        if (!f) {
            return fail(map_io_error(f.error(), "opening the active segment"));
        }
        if (auto w = (*f)->write_at(batches, active->size); !w) {
            // Cut whatever part was written, so the file ends at the last whole batch.
            (void)(*f)->truncate(active->size);
            return fail(map_io_error(w.error(), "writing to the active segment"));
        }
        for (const auto& p : pending) {
            active->index_batch(p.header, active->size + p.at, cfg->index_interval_bytes);
        }
        if (active->first_append_ms < 0) {
            active->first_append_ms = opts.now_ms;
        }
        active->mark_verified(active->size, active->size + total);  // CRCs checked above
        active->size += total;
        active->next_offset = next;
        out.base_offset = log_end_;
        out.last_offset = next - 1;
        log_end_ = next;
        size_bytes_ += static_cast<std::int64_t>(total);
        out.log_start_offset = log_start_;
        if (opts.validator != nullptr) {
            for (const auto& p : pending) {
                opts.validator->appended(p.header);
            }
        }
        wake.swap(data_waiters_);
        data_waiters_pruned_size_ = 0;
    }
    for (auto& w : wake) {
        if (auto live = w.lock()) {
            live->notify();
        }
    }
    return out;
}

void partition_log::register_flush_waiter(std::unique_ptr<flush_waiter> w) {
    bool now = false;
    bool closed = false;
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            closed = true;
        } else if (w->target <= flushed_) {
            now = true;
        } else {
            flush_waiters_.push_back(std::move(w));
        }
    }
    if (closed) {
        w->complete(fail(errc::log_closed));
    } else if (now) {
        w->complete(result<void>{});
    } else {
        request_sync();
    }
}

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

result<read_result> partition_log::read_attempt(offset from, std::size_t max_bytes,
                                                const read_options& opts,
                                                std::vector<std::shared_ptr<segment>>& used) {
    struct snapshot {
        std::shared_ptr<segment> seg;
        std::uint64_t size;
    };
    std::vector<snapshot> segs;
    read_result out;
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            return fail(errc::log_closed);
        }
        out.high_watermark = log_end_;
        out.log_start_offset = log_start_;
        out.log_end_offset = log_end_;
        if (from < log_start_ || from > log_end_) {
            return fail(errc::offset_out_of_range);
        }
        out.records = kafka::records::empty();
        if (from == log_end_) {
            return out;
        }
        // Usually the first segment holds `from`; the next ones serve offsets that compaction
        // removed from the end of a segment.
        for (std::size_t i = find_segment_locked(from); i < segments_.size() && segs.size() < 4;
             ++i) {
            segs.push_back({segments_[i], segments_[i]->size});
            used.push_back(segments_[i]);
        }
    }
    offset limit = out.high_watermark;
    if (opts.max_offset && *opts.max_offset < limit) {
        limit = *opts.max_offset;
    }
    if (from >= limit) {
        return out;
    }
    for (auto& s : segs) {
        std::uint64_t end = s.size;
        std::int64_t bad = s.seg->corrupt_at.load();
        bool capped = bad >= 0 && static_cast<std::uint64_t>(bad) < end;
        if (capped) {
            end = static_cast<std::uint64_t>(bad);
        }
        auto f = s.seg->log_file().get();
        if (!f) {
            return fail(map_io_error(f.error(), "opening a segment for reading"));
        }
        std::uint64_t start_pos = 0;
        offset min_next = s.seg->base_offset();
        auto e = s.seg->offset_index().floor(from.value, false);
        if (!e) {
            return fail(map_io_error(e.error(), "reading an offset index"));
        }
        if (s.seg->offset_index().damaged()) {
            note_index_damage(s.seg);
        }
        if (*e) {
            start_pos = static_cast<std::uint64_t>((*e)->value);
            min_next = offset((*e)->key);
        }
        batch_scanner scan(**f, start_pos, end, opts.verify_crc, min_next);
        batch_scanner::item it;
        std::optional<std::uint64_t> first;
        std::uint64_t total = 0;
        bool corrupt = false;
        bool done = false;  // stopped before the end of the segment: no need to look further
        while (true) {
            auto o = scan.next(it);
            if (!o) {
                return fail(map_io_error(o.error(), "reading a segment"));
            }
            if (*o == batch_scanner::outcome::end) {
                break;
            }
            if (*o != batch_scanner::outcome::batch) {
                corrupt = true;
                std::int64_t at = static_cast<std::int64_t>(scan.position());
                std::int64_t expected = -1;
                if (s.seg->corrupt_at.compare_exchange_strong(expected, at)) {
                    storage_log().error(
                        "{}-{}: segment {} is corrupt at byte {} ({}); reads stop there",
                        topic_, id_.value, s.seg->base_offset().value, at, scan.reason());
                }
                break;
            }
            if (it.header.last_offset() < from.value) {
                continue;
            }
            if (it.header.base_offset >= limit.value) {
                done = true;
                break;
            }
            std::uint64_t size = it.header.total_size();
            if (!first) {
                if (size > max_bytes && !opts.min_one_batch) {
                    done = true;
                    break;
                }
                first = it.position;
                total = size;
            } else {
                if (total + size > max_bytes) {
                    break;
                }
                total += size;
            }
            if (total >= max_bytes) {
                break;
            }
        }
        if (first && (opts.verify_crc || !s.seg->is_verified(*first, *first + total))) {
            // Not yet checked in this process: check before serving, so corruption inside a
            // segment is reported instead of handed to clients.
            batch_scanner check(**f, *first, *first + total, true, offset(0));
            batch_scanner::item c;
            std::uint64_t good = *first;
            while (true) {
                auto o = check.next(c);
                if (!o) {
                    return fail(map_io_error(o.error(), "reading a segment"));
                }
                if (*o != batch_scanner::outcome::batch) {
                    break;
                }
                good = check.position();
            }
            if (good < *first + total) {
                std::int64_t expected = -1;
                if (s.seg->corrupt_at.compare_exchange_strong(
                        expected, static_cast<std::int64_t>(good))) {
                    storage_log().error(
                        "{}-{}: segment {} is corrupt at byte {} ({}); reads stop there",
                        topic_, id_.value, s.seg->base_offset().value, good, check.reason());
                }
                if (good == *first) {
                    return fail(errc::segment_corrupt);
                }
                total = good - *first;
            } else {
                s.seg->mark_verified(*first, *first + total);
            }
        }
        if (first) {
            auto recs = make_records(*f, *first, total);
            if (!recs) {
                return fail(map_io_error(recs.error(), "reading a segment"));
            }
            out.records = std::move(*recs);
            return out;
        }
        if (corrupt || capped) {
            return fail(errc::segment_corrupt);
        }
        if (done) {
            return out;
        }
    }
    return out;
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
                auto rec = find_record(**f, it.position, it.header.total_size(), start.value,
                                       [&](const kafka::record_view& r) {
                                           return r.timestamp >= ts_ms;
                                       });
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
            auto rec = find_record(**f, it.position, it.header.total_size(), 0,
                                   [&](const kafka::record_view& r) {
                                       return r.timestamp == best.timestamp;
                                   });
            return rec ? *rec : best;
        }
        if (it.header.base_offset > best.off.value) {
            return best;
        }
    }
}

void partition_log::add_waiter(std::shared_ptr<data_waiter> w) {
    bool now = false;
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            now = true;
        } else {
            data_waiters_.push_back(w);
            // Waiters whose fetch already ended are pruned as the list doubles.
            if (data_waiters_.size() >= std::max<std::size_t>(16, 2 * data_waiters_pruned_size_)) {
                std::erase_if(data_waiters_, [](const auto& x) { return x.expired(); });
                data_waiters_pruned_size_ = data_waiters_.size();
            }
        }
    }
    if (now) {
        w->notify();
    }
}

void partition_log::add_waiter(std::shared_ptr<data_waiter> w, offset seen_end) {
    {
        std::lock_guard lock(mu_);
        if (!closed_ && log_end_ <= seen_end) {
            data_waiters_.push_back(w);
            if (data_waiters_.size() >= std::max<std::size_t>(16, 2 * data_waiters_pruned_size_)) {
                std::erase_if(data_waiters_, [](const auto& x) { return x.expired(); });
                data_waiters_pruned_size_ = data_waiters_.size();
            }
            return;
        }
    }
    w->notify();
}

result<void> partition_log::write_log_start(offset o) {
    std::string text = std::to_string(o.value) + "\n";
    return io::write_file_atomic(env_->fs(), io::join_path(dir_, "log-start-offset"),
                                 protocol::as_bytes(text));
}

void partition_log::delete_segment_files(const std::vector<std::shared_ptr<segment>>& dead) {
    auto& fs = env_->fs();
    for (const auto& s : dead) {
        s->deleted = true;
        s->log_file().close();
        s->offset_index().close_file();
        s->time_index().close_file();
        // The .log first: an index without its .log is removed at the next open; a .log
        // without indexes would come back (harmlessly) and be deleted again.
        for (const char* ext : {".log", ".index", ".timeindex"}) {
            auto path = io::join_path(dir_, segment::file_name(s->base_offset(), ext));
            if (auto r = fs.remove(path); !r) {
                storage_log().warn("{}-{}: could not remove {}: {}", topic_, id_.value, path,
                                   r.error().message());
            }
        }
    }
}

result<offset> partition_log::delete_records(offset before) {
    std::lock_guard admin(admin_mu_);
    offset target{0};
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            return fail(errc::log_closed);
        }
        target = before.value == -1 ? log_end_ : before;
        if (target.value < 0 || target > log_end_) {
            return fail(errc::offset_out_of_range);
        }
        if (target <= log_start_) {
            return log_start_;
        }
    }
    if (auto w = write_log_start(target); !w) {
        return fail(map_io_error(w.error(), "writing the log start offset"));
    }
    std::vector<std::shared_ptr<segment>> dead;
    {
        std::lock_guard lock(mu_);
        if (target > log_start_) {
            log_start_ = target;
        }
        while (segments_.size() > 1 && segments_[1]->base_offset() <= log_start_) {
            size_bytes_ -= static_cast<std::int64_t>(segments_.front()->size);
            dead.push_back(segments_.front());
            segments_.erase(segments_.begin());
        }
    }
    delete_segment_files(dead);
    storage_log().info("{}-{}: log start offset moved to {} by delete-records ({} segments deleted)",
                       topic_, id_.value, target.value, dead.size());
    return target;
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

result<void> partition_log::close(bool flush) {
    std::vector<std::unique_ptr<flush_waiter>> waiters;
    std::vector<std::weak_ptr<data_waiter>> wake;
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            return {};
        }
        closed_ = true;
        wake.swap(data_waiters_);
        if (!flush) {
            waiters.swap(flush_waiters_);
        }
    }
    for (auto& w : wake) {
        if (auto live = w.lock()) {
            live->notify();
        }
    }
    for (auto& w : waiters) {
        w->complete(fail(errc::log_closed));
    }
    if (flush) {
        sync_round(true);
        std::lock_guard lock(mu_);
        if (flushed_ < log_end_) {
            return fail(errc::storage_error);
        }
    }
    return {};
}

void partition_log::note_index_damage(const std::shared_ptr<segment>& seg) {
    if (!seg->index_rebuild.exchange(true)) {
        storage_log().warn("{}-{}: the index of segment {} is damaged; lookups scan the segment "
                           "until it is rebuilt",
                           topic_, id_.value, seg->base_offset().value);
        request_sync();
    }
}

void partition_log::request_sync() {
    if (!sync_queued_.exchange(true)) {
        env_->fsyncs->enqueue(shared_from_this());
    }
}

void partition_log::run_sync() {
    sync_queued_ = false;
    sync_round(false);
}

bool partition_log::needs_sync() const {
    std::lock_guard lock(mu_);
    for (const auto& s : segments_) {
        if (s->force_sync || s->synced.size < s->size || (s->sealed && !s->seal_persisted) ||
            !s->dir_durable) {
            return true;
        }
    }
    return false;
}

}  // namespace sluice::backend::log
