// partition_log's group-commit round (runs on a flusher thread, or on the closing thread) and
// what happens when an fsync fails.
#include <algorithm>

#include "backend/io/file.h"
#include "backend/log/partition_log.h"
#include "backend/logger.h"

namespace sluice::backend::log {

void partition_log::rebuild_damaged_indexes() {
    std::vector<std::pair<std::shared_ptr<segment>, index_header>> work;
    std::int32_t interval = 0;
    {
        std::lock_guard lock(mu_);
        interval = config_->index_interval_bytes;
        for (const auto& s : segments_) {
            if (s->index_rebuild && s->sealed && s->seal_persisted) {
                work.emplace_back(s, s->sealed_header());
            }
        }
    }
    for (auto& [seg, header] : work) {
        auto r = rebuild_sealed_index(*seg, env_->files, dir_, header, interval);
        if (r) {
            r = env_->fs().sync_dir(dir_);
        }
        seg->index_rebuild = false;
        if (r) {
            storage_log().info("{}-{}: rebuilt the indexes of segment {}", topic_, id_.value,
                               seg->base_offset().value);
        } else {
            storage_log().warn("{}-{}: rebuilding the indexes of segment {} failed: {}", topic_,
                               id_.value, seg->base_offset().value, r.error().message());
        }
    }
}

void partition_log::sync_round(bool final_close) {
    std::lock_guard round(sync_mu_);
    rebuild_damaged_indexes();
    struct task {
        std::shared_ptr<segment> seg;
        sync_point target;
        index_header header;
        bool data = false;    // fdatasync the .log
        bool trim = false;    // cut the zeros written ahead first (sealed, or closing)
        bool seal = false;    // write the sealed indexes
        bool active = false;  // persist the active segment's index entries
        bool synced_ok = false;
        bool sealed_ok = false;
    };
    std::vector<task> tasks;
    offset target_end{0};
    bool need_dir = false;
    {
        std::lock_guard lock(mu_);
        if (closed_ && !final_close) {
            return;
        }
        target_end = log_end_;
        for (const auto& s : segments_) {
            task t;
            t.seg = s;
            t.target = {s->size, s->next_offset, s->max_timestamp, s->max_timestamp_offset};
            t.header = s->sealed_header();
            t.active = s == segments_.back();
            t.trim = s->allocated > s->size && (s->sealed || (final_close && t.active)) &&
                     !s->deleted;
            t.data = s->force_sync || s->synced.size < s->size || t.trim;
            t.seal = s->sealed && !s->seal_persisted && !s->deleted;
            need_dir = need_dir || !s->dir_durable;
            // An empty active segment has no index entries to write at close: skipping it
            // keeps the shutdown of thousands of idle partitions free of fsyncs.
            const bool close_index = t.active && final_close && t.target.size > 0;
            if (t.data || t.seal || !s->dir_durable || close_index) {
                tasks.push_back(std::move(t));
            }
        }
    }

    auto& fs = env_->fs();
    std::error_code failure;
    std::size_t failed_at = tasks.size();
    bool dir_synced = false;
    if (need_dir) {
        if (auto r = fs.sync_dir(dir_); r) {
            dir_synced = true;
        } else {
            failure = r.error();
        }
    }
    bool any_sealed = false;
    for (std::size_t k = 0; k < tasks.size() && !failure; ++k) {
        auto& t = tasks[k];
        if (t.data) {
            auto f = t.seg->log_file().get();
            result<void> r = f ? result<void>{} : result<void>(fail(f.error()));
            if (r && t.trim) {
                // No append can reach this segment any more, and readers stay below its size.
                r = (*f)->truncate(t.target.size);
            }
            if (r) {
                r = (*f)->sync();
            }
            if (!r) {
                failure = r.error();
                failed_at = k;
                break;
            }
            t.synced_ok = true;
        }
        if (t.seal) {
            // Sealed indexes are an optimisation for the next open; failing to write them
            // costs a rebuild then, not data.
            auto a = t.seg->offset_index().write_sealed(t.header);
            auto b = a ? t.seg->time_index().write_sealed(t.header) : result<void>(a);
            if (b) {
                t.sealed_ok = true;
                any_sealed = true;
            } else {
                storage_log().warn("{}-{}: could not write the sealed indexes of segment {}: {}",
                                   topic_, id_.value, t.seg->base_offset().value,
                                   b.error().message());
            }
        } else if (t.active) {
            // Only entries that point at synced bytes go to disk (see sparse_index.h).
            auto a =
                final_close
                    ? t.seg->offset_index().write_unsealed_all()
                    : t.seg->offset_index().persist_below(static_cast<std::int64_t>(t.target.size));
            auto b = final_close ? t.seg->time_index().write_unsealed_all()
                                 : t.seg->time_index().persist_below(t.target.next_offset.value);
            if (!a || !b) {
                storage_log().warn("{}-{}: could not write index entries of segment {}: {}", topic_,
                                   id_.value, t.seg->base_offset().value,
                                   (!a ? a.error() : b.error()).message());
            }
        }
    }
    if (any_sealed) {
        // The renames of the sealed index files must survive before they are relied on.
        if (auto r = fs.sync_dir(dir_); !r) {
            for (auto& t : tasks) {
                t.sealed_ok = false;
            }
        }
    }

    std::vector<std::unique_ptr<flush_waiter>> ok;
    std::vector<std::unique_ptr<flush_waiter>> failed;
    bool more = false;
    {
        std::lock_guard lock(mu_);
        for (auto& t : tasks) {
            if (t.seg->deleted) {
                continue;
            }
            if (t.synced_ok) {
                t.seg->synced = t.target;
                t.seg->force_sync = false;
                if (t.trim) {
                    t.seg->allocated = t.target.size;
                }
            }
            if (dir_synced) {
                t.seg->dir_durable = true;
            }
            if (t.sealed_ok) {
                t.seg->seal_persisted = true;
            }
        }
        if (!failure) {
            flushed_ = std::max(flushed_, target_end);
        } else if (failed_at < tasks.size()) {
            auto it = std::find(segments_.begin(), segments_.end(), tasks[failed_at].seg);
            if (it != segments_.end()) {
                fail_tail_locked(static_cast<std::size_t>(it - segments_.begin()), failure);
            }
        } else if (!sync_failure_) {
            storage_log().error(
                "{}-{}: fsync of the partition folder failed ({}); the partition refuses "
                "writes until sluice is restarted and recovers it from disk",
                topic_, id_.value, failure.message());
        }
        if (failure) {
            // Never retried as if it had worked: the kernel may have dropped the pages it could
            // not write, and a later fsync would succeed without them ("fsyncgate").
            sync_failure_ = failure;
        }
        auto split = std::partition(flush_waiters_.begin(), flush_waiters_.end(),
                                    [&](const auto& w) { return w->target > flushed_; });
        for (auto it = split; it != flush_waiters_.end(); ++it) {
            ok.push_back(std::move(*it));
        }
        flush_waiters_.erase(split, flush_waiters_.end());
        if (failure) {
            // Everyone still waiting wanted bytes that are now cut off (or whose directory
            // entry could not be made durable): fail them; the producer retries.
            failed.swap(flush_waiters_);
        }
        more = !flush_waiters_.empty();
    }
    complete_grouped(std::move(ok), result<void>{});
    if (!failed.empty()) {
        std::error_code ec =
            make_error_code(io::is_disk_full(failure) ? errc::disk_full : errc::storage_error);
        for (auto& w : failed) {
            w->complete(fail(ec));
        }
    }
    if (more && !final_close) {
        request_sync();
    }
}

void partition_log::complete_grouped(std::vector<std::unique_ptr<flush_waiter>> waiters,
                                     result<void> r) {
    if (waiters.size() == 1) {
        waiters.front()->complete(r);
        return;
    }
    // Waiters of one executor (an io thread) go in one posted handler, in their order.
    while (!waiters.empty()) {
        std::vector<std::unique_ptr<flush_waiter>> group;
        std::vector<std::unique_ptr<flush_waiter>> rest;
        const boost::asio::any_io_executor ex = waiters.front()->executor();
        for (auto& w : waiters) {
            if (w->executor() == ex) {
                group.push_back(std::move(w));
            } else {
                rest.push_back(std::move(w));
            }
        }
        boost::asio::post(ex, [group = std::move(group), r]() mutable {
            for (auto& w : group) {
                w->complete_here(r);
            }
        });
        waiters.swap(rest);
    }
}

void partition_log::fail_tail_locked(std::size_t seg_index, const std::error_code& ec) {
    // After a failed fsync the kernel may have dropped the dirty pages while a later fsync
    // would succeed: bytes past the last good sync point cannot be trusted, so they go.
    auto seg = segments_[seg_index];
    const sync_point sp = seg->synced;
    offset old_end = log_end_;
    std::uint64_t dropped = seg->size - sp.size;
    for (std::size_t i = seg_index + 1; i < segments_.size(); ++i) {
        dropped += segments_[i]->size;
    }
    storage_log().error(
        "{}-{}: fsync of segment {} failed ({}); cutting the log back from offset {} to {} "
        "({} bytes not acknowledged as durable are dropped); the partition refuses writes "
        "until sluice is restarted and recovers it from disk",
        topic_, id_.value, seg->base_offset().value, ec.message(), old_end.value,
        sp.next_offset.value, dropped);
    if (auto f = seg->log_file().get(); f) {
        (void)(*f)->truncate(sp.size);
    }
    (void)seg->offset_index().truncate_values_from(static_cast<std::int64_t>(sp.size));
    (void)seg->time_index().truncate_values_from(sp.next_offset.value);
    seg->reset_to(sp);
    seg->allocated = sp.size;
    seg->sealed = false;
    seg->seal_persisted = false;
    std::vector<std::shared_ptr<segment>> dead(
        segments_.begin() + static_cast<std::ptrdiff_t>(seg_index + 1), segments_.end());
    segments_.resize(seg_index + 1);
    delete_segment_files(dead);
    log_end_ = sp.next_offset;
    flushed_ = log_end_;  // every earlier segment was synced before this one was tried
    size_bytes_ = 0;
    for (const auto& s : segments_) {
        size_bytes_ += static_cast<std::int64_t>(s->size);
    }
}

}  // namespace sluice::backend::log
