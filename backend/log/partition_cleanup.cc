// partition_log::apply_retention: deleting whole segments by time, size and log start offset.
#include "backend/io/file.h"
#include "backend/log/partition_log.h"
#include "backend/logger.h"

namespace sluice::backend::log {

result<retention_result> partition_log::apply_retention(std::int64_t now_ms) {
    std::lock_guard admin(admin_mu_);
    retention_result out;
    std::vector<std::shared_ptr<segment>> dead;
    std::shared_ptr<segment> fresh;
    bool by_time_any = false;
    bool by_size_any = false;
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            return fail(errc::log_closed);
        }
        const auto cfg = config_;
        std::int64_t remaining = size_bytes_;
        std::size_t n = 0;
        for (; n < segments_.size(); ++n) {
            const auto& s = segments_[n];
            const bool is_active = n + 1 == segments_.size();
            const std::int64_t size = static_cast<std::int64_t>(s->size);
            // Kafka's rule: a segment's age is its largest timestamp (or, without timestamps,
            // when it was first written to).
            const std::int64_t ts = s->max_timestamp >= 0 ? s->max_timestamp : s->first_append_ms;
            const bool below_start = is_active ? (size > 0 && s->next_offset <= log_start_)
                                               : segments_[n + 1]->base_offset() <= log_start_;
            const bool by_time = cfg->cleanup_delete && cfg->retention_ms >= 0 && size > 0 &&
                                 ts >= 0 && now_ms - ts > cfg->retention_ms;
            const bool by_size = cfg->cleanup_delete && cfg->retention_bytes >= 0 && !is_active &&
                                 remaining - size >= cfg->retention_bytes;
            if (!below_start && !by_time && !by_size) {
                break;
            }
            by_time_any = by_time_any || by_time;
            by_size_any = by_size_any || by_size;
            remaining -= size;
        }
        if (n == segments_.size()) {
            // Everything expired, the active segment too: continue in a new empty segment at
            // the log end, so the offsets handed out so far are never reused.
            auto seg = std::make_shared<segment>(env_->files, dir_, log_end_);
            if (auto f = seg->log_file().get(); !f) {
                return fail(map_io_error(f.error(), "creating a segment"));
            }
            segments_.back()->sealed = true;
            segments_.push_back(seg);
            fresh = seg;
        }
        for (std::size_t i = 0; i < n; ++i) {
            size_bytes_ -= static_cast<std::int64_t>(segments_[i]->size);
            out.bytes_deleted += static_cast<std::int64_t>(segments_[i]->size);
            dead.push_back(segments_[i]);
        }
        segments_.erase(segments_.begin(), segments_.begin() + static_cast<std::ptrdiff_t>(n));
        if (segments_.front()->base_offset() > log_start_) {
            log_start_ = segments_.front()->base_offset();
        }
        out.log_start_offset = log_start_;
        out.segments_deleted = static_cast<std::int32_t>(n);
    }
    if (dead.empty()) {
        return out;
    }
    if (fresh) {
        // The new segment's name must be durable before the old ones disappear, or a crash
        // could leave a folder without segments and offsets would start again from 0.
        if (auto r = env_->fs().sync_dir(dir_); !r) {
            return fail(map_io_error(r.error(), "syncing a partition folder"));
        }
        std::lock_guard lock(mu_);
        fresh->dir_durable = true;
    }
    delete_segment_files(dead);
    storage_log().info("{}-{}: retention deleted {} segments ({} bytes{}{}); log start offset {}",
                       topic_, id_.value, out.segments_deleted, out.bytes_deleted,
                       by_time_any ? ", by retention.ms" : "",
                       by_size_any ? ", by retention.bytes" : "", out.log_start_offset.value);
    return out;
}

}  // namespace sluice::backend::log
