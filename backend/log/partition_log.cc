// partition_log: opening, appends, waiters, delete_records and close. Reads and timestamp
// lookups are in partition_read.cc, recovery in partition_recovery.cc, the flusher round in
// partition_sync.cc, retention and compaction in partition_cleanup.cc and compactor.cc.
#include "backend/log/partition_log.h"

#include <algorithm>
#include <limits>
#include <span>
#include <vector>

#include <fmt/format.h>

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

}  // namespace

partition_log::partition_log(std::shared_ptr<const log_env> env, std::string dir, std::string topic,
                             partition_id id, std::shared_ptr<const topic_config> cfg)
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

offset partition_log::high_watermark() const {
    return log_end_offset();
}

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
    auto it = std::upper_bound(
        segments_.begin(), segments_.end(), o,
        [](offset v, const std::shared_ptr<segment>& s) { return v < s->base_offset(); });
    return it == segments_.begin() ? 0 : static_cast<std::size_t>(it - segments_.begin() - 1);
}

std::error_code partition_log::map_io_error(const std::error_code& ec, const char* what) const {
    storage_log().error("{}-{}: {} failed: {}", topic_, id_.value, what, ec.message());
    return make_error_code(io::is_disk_full(ec) ? errc::disk_full : errc::storage_error);
}

std::error_code partition_log::append_io_error_locked(const std::error_code& ec,
                                                      const char* what) {
    if (!io::is_disk_full(ec)) {
        return map_io_error(ec, what);
    }
    if (!disk_full_) {
        disk_full_ = true;
        storage_log().error("{}-{}: {} failed: {}; appends are refused until space returns",
                            topic_, id_.value, what, ec.message());
    }
    return make_error_code(errc::disk_full);
}

result<std::shared_ptr<segment>> partition_log::roll_locked(std::int64_t now_ms) {
    auto old = active_locked();
    auto fresh = std::make_shared<segment>(env_->files, dir_, old->next_offset);
    if (auto f = fresh->log_file().get(); !f) {
        return fail(append_io_error_locked(f.error(), "creating a segment"));
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
    std::vector<api::record_error> keyless;  // records refused for want of a key
    while (true) {
        auto b = cursor.next();
        if (b.empty()) {
            break;
        }
        auto h = kafka::validate_batch(b);
        if (!h) {
            return fail(errc::corrupt_message);
        }
        // compat: UnifiedLog checks max.message.bytes first (RecordTooLargeException), then
        // that the batch fits a segment at all (RecordBatchTooLargeException).
        if (b.size() > static_cast<std::size_t>(cfg->max_message_bytes)) {
            return fail(errc::message_too_large);
        }
        if (b.size() > static_cast<std::size_t>(cfg->segment_bytes)) {
            return fail(errc::record_list_too_large);
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
            if (!summary->offsets_consecutive) {
                return fail(errc::invalid_record);
            }
            // compat: LogValidator.validateKey reports each keyless record (KIP-467) and
            // refuses the batch after checking all of them; so does this, for every batch
            // of the request, counting positions across them (Kafka takes one batch).
            for (const std::int32_t i : summary->null_key_indexes) {
                keyless.push_back(
                    {static_cast<std::int32_t>(records) + i,
                     fmt::format("Compacted topic cannot accept message without key in "
                                 "topic partition {}-{}",
                                 topic_, id_.value)});
            }
        }
        pending.push_back({static_cast<std::size_t>(b.data() - batches.data()), *h});
        records += h->records_count;
    }
    if (pending.empty() || cursor.truncated_tail() || cursor.malformed()) {
        return fail(errc::corrupt_message);
    }
    if (!keyless.empty()) {
        if (opts.record_errors != nullptr) {
            *opts.record_errors = std::move(keyless);
        }
        return fail(errc::invalid_record);
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
        if (sync_failure_) {
            // Logged once, when the fsync failed (partition_sync.cc).
            return fail(errc::storage_error);
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
            active->allocated = active->size;
            return fail(append_io_error_locked(w.error(), "writing to the active segment"));
        }
        if (active->size + total > active->allocated) {
            active->allocated = active->size + total;
            zero_ahead_locked(*active, **f, total, *cfg);
        }
        if (disk_full_) {
            disk_full_ = false;
            storage_log().info("{}-{}: appends resumed: space is available again", topic_,
                               id_.value);
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

namespace {

// Appends larger than this grow the file as they go: their fdatasync writes enough data that the
// inode write is a small part of it, and zeros ahead of them would double the bytes written.
constexpr std::uint64_t zero_ahead_largest_append = 64 << 10;
constexpr std::uint64_t zero_ahead_page = 4096;

}  // namespace

void partition_log::zero_ahead_locked(segment& seg, io::file& f, std::uint64_t appended,
                                      const topic_config& cfg) {
    const std::uint64_t most = env_->zero_ahead_bytes;
    if (most == 0 || env_->policy != flush_policy::always || appended > zero_ahead_largest_append ||
        seg.zero_ahead_failed) {
        return;
    }
    // As much ahead as the segment holds already, up to `most`: a partition written rarely
    // keeps at most a few pages of zeros, a busy one grows its file once per `most` bytes.
    const std::uint64_t from = seg.allocated;
    const std::uint64_t ahead = std::clamp(from, zero_ahead_page, most);
    std::uint64_t to = (from + ahead + zero_ahead_page - 1) / zero_ahead_page * zero_ahead_page;
    to = std::min(to, std::max(from, static_cast<std::uint64_t>(cfg.segment_bytes)));
    static const std::vector<std::byte> zeros(1 << 20);
    for (std::uint64_t at = from; at < to;) {
        const std::uint64_t n = std::min<std::uint64_t>(to - at, zeros.size());
        if (auto w = f.write_at(std::span(zeros.data(), n), at); !w) {
            // Typically a full disk: what was written of the zeros goes, the append stands, and
            // this segment grows as it is written from now on.
            (void)f.truncate(from);
            seg.zero_ahead_failed = true;
            return;
        }
        at += n;
    }
    seg.allocated = to;
}

void partition_log::register_flush_waiter(std::unique_ptr<flush_waiter> w) {
    bool now = false;
    bool closed = false;
    bool failed = false;
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            closed = true;
        } else if (w->target <= flushed_) {
            now = true;
        } else if (sync_failure_) {
            failed = true;
        } else {
            flush_waiters_.push_back(std::move(w));
        }
    }
    if (closed) {
        w->complete(fail(errc::log_closed));
    } else if (failed) {
        w->complete(fail(errc::storage_error));
    } else if (now) {
        w->complete(result<void>{});
    } else {
        request_sync();
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
    storage_log().info(
        "{}-{}: log start offset moved to {} by delete-records ({} segments deleted)", topic_,
        id_.value, target.value, dead.size());
    return target;
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
        storage_log().warn(
            "{}-{}: the index of segment {} is damaged; lookups scan the segment "
            "until it is rebuilt",
            topic_, id_.value, seg->base_offset().value);
        request_sync();
    }
}

void partition_log::request_sync() {
    sync_again_ = true;
    if (!sync_queued_.exchange(true)) {
        env_->fsyncs->enqueue(shared_from_this());
    }
}

void partition_log::run_sync() {
    // Rounds asked for while one runs follow on this thread: handing them to another flusher
    // thread made it sleep on sync_mu_ until this round ended, a futex wait and wake per round.
    constexpr int max_rounds_in_a_row = 16;
    for (int round = 0; round < max_rounds_in_a_row; ++round) {
        sync_again_ = false;
        sync_round(false);
        if (sync_again_) {
            continue;
        }
        sync_queued_ = false;
        // A request between the check above and the store saw the partition queued and left
        // the round to us; one after the store queued it again itself.
        if (!sync_again_ || sync_queued_.exchange(true)) {
            return;
        }
    }
    env_->fsyncs->enqueue(shared_from_this());  // still queued: behind the other partitions
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
