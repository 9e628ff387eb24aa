// One partition of the native log: an append-only sequence of record batches in segments, with
// offset assignment, reads by offset and time, durability (group-committed fsync), retention,
// compaction and recovery (owned by backend/log; the Kafka front and the internal-state
// modules use it through log_manager::partition()).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "backend/api/records.h"
#include "backend/log/data_waiter.h"
#include "backend/log/errc.h"
#include "backend/log/log_env.h"
#include "backend/log/segment.h"
#include "backend/log/topic_config.h"
#include "protocol/core/ids.h"
#include "protocol/core/result.h"
#include "protocol/kafka/codec.h"
#include "protocol/kafka/record_batch.h"

namespace sluice::backend::log {

/// "No such offset" (offset_for_timestamp found nothing, or an empty log's max timestamp).
constexpr offset no_offset{-1};

struct append_result {
    offset base_offset{-1};                // first offset of the first batch
    offset last_offset{-1};                // last offset of the last batch
    std::int64_t log_append_time_ms = -1;  // the stamped time under LogAppendTime, else -1
    offset log_start_offset{-1};
    bool duplicate = false;  // the validator reported the batches as already stored
};

/// Hook for the producer-state and transaction modules: checks that must run atomically with
/// offset assignment (idempotent sequence numbers, transaction state).
///
/// Called under the partition's append lock. check() runs for every batch of the request, in
/// order, before offsets are assigned, and must not change state: it returns
///   - an error: the whole request is refused with that error (nothing is written);
///   - an append_result: the batch duplicates one already stored at those offsets. When every
///     batch of a request is a duplicate, append() returns the first's base and the last's last
///     offset with duplicate=true and writes nothing; a request mixing duplicates with new
///     batches is refused with errc::invalid_record;
///   - std::nullopt: accept.
/// appended() runs for every batch after the bytes were written, with the assigned offsets in
/// the header, still under the lock; it is where the validator records new state.
class append_validator {
public:
    virtual ~append_validator() = default;
    virtual result<std::optional<append_result>> check(const protocol::kafka::batch_header& h,
                                                       offset next_offset) = 0;
    virtual void appended(const protocol::kafka::batch_header& h) = 0;
};

struct append_options {
    /// Wall-clock time of the append (LogAppendTime stamps, segment.ms roll).
    std::int64_t now_ms = 0;
    /// Optional idempotence/transaction checks (see append_validator); not owned.
    append_validator* validator = nullptr;
    /// Accept control batches (transaction markers written by the coordinator). Clients
    /// may not write them.
    bool allow_control_batches = false;
    /// Optional, not owned: when the append fails with invalid_record because of particular
    /// records (a record without a key in a compacted topic), those records, as Kafka's
    /// LogValidator reports them; untouched otherwise.
    std::vector<api::record_error>* record_errors = nullptr;
};

struct read_options {
    /// Return the first batch even when it is larger than max_bytes (KIP-74).
    bool min_one_batch = true;
    /// Check each returned batch's CRC even if it was checked before. (Bytes not yet checked
    /// in this process are always checked before they are served.)
    bool verify_crc = false;
    /// Return only batches that start below this offset (e.g. the last stable offset for
    /// read_committed); the high watermark when unset.
    std::optional<offset> max_offset;
};

struct read_result {
    /// Whole batches: file regions (sendfile) or memory chunks (data not in a real file).
    protocol::kafka::records records;
    offset high_watermark{0};
    offset log_start_offset{0};
    offset log_end_offset{0};
    /// Records in `records`' batches (their records_count fields, whole batches).
    std::uint64_t record_count = 0;
    /// partition_log::compaction_generation() when the read began: a reader that pairs these
    /// records with state derived from the log (the aborted transactions of a read_committed
    /// fetch) reads again when the generation moved on since.
    std::uint64_t compaction_generation = 0;
};

struct timestamp_and_offset {
    std::int64_t timestamp = -1;
    offset off{-1};
    bool operator==(const timestamp_and_offset&) const = default;
};

/// What recovery did when the partition was opened.
struct recovery_report {
    std::int64_t truncated_bytes = 0;   // torn or corrupt tail bytes cut off
    std::int32_t segments_dropped = 0;  // segments after a torn point, deleted
    std::int32_t indexes_rebuilt = 0;   // segments whose index files were rebuilt
    std::int32_t corrupt_segments = 0;  // sealed segments with corruption (kept, reported)
    std::int64_t bytes_validated = 0;   // bytes whose CRCs were checked
};

struct retention_result {
    std::int32_t segments_deleted = 0;
    std::int64_t bytes_deleted = 0;
    offset log_start_offset{0};
};

struct compaction_result {
    std::int32_t segments_cleaned = 0;  // input segments rewritten
    std::int64_t bytes_before = 0;
    std::int64_t bytes_after = 0;
    std::int64_t records_removed = 0;
    std::int32_t markers_removed = 0;  // transaction markers (commit and abort) removed
};

/// A transaction marker that compaction removed (compactor.cc says when it may).
struct removed_marker {
    std::int64_t producer_id = -1;
    offset at{-1};  // the marker's offset
    bool commit = false;
    bool operator==(const removed_marker&) const = default;
};

struct segment_info {
    offset base_offset{0};
    offset next_offset{0};
    std::uint64_t size = 0;
    std::int64_t max_timestamp = -1;
    bool sealed = false;
};

/// A partition's log.
///
/// Folder `<data_dir>/<topic>-<partition>/`:
///   <base>.log / .index / .timeindex   segments (segment.h, sparse_index.h)
///   partition.metadata                 "version: 0\ntopic_id: <base64 id>\n" (as Kafka)
///   log-start-offset                   "<offset>\n", written atomically by delete_records
///                                      (absent: the first segment's base offset)
///
///   append ──lock──> assign offsets, write at the end of the active segment, index
///      │                                  │ (roll: new segment; old one sealed)
///   flush_to(end) ──> waiter ──> flusher thread: fdatasync, seal indexes, sync dir
///                                 └──> flushed offset advances, waiters resume on their
///                                      own executors (one fsync serves all of them)
///   read ──lock: snapshot──> index lookup + header scan without the lock ──> file regions
///
/// Crash behaviour: bytes below the flushed offset survive a power loss. On open, every segment
/// is checked: a sealed segment whose sealed index matches its size is trusted; otherwise its
/// batches after the last index entry are validated (length, CRC, offsets) and a torn tail is
/// cut off (logged with the byte count). A bad batch inside a sealed segment is reported and
/// the segment is served only up to it (reads past it fail with segment_corrupt). Missing or
/// damaged index files are rebuilt from the segment.
///
/// Concurrency: thread-safe. One mutex guards offsets and the segment list (appends hold it
/// while writing; readers only to take a snapshot); the flusher works without it.
class partition_log : public std::enable_shared_from_this<partition_log> {
public:
    /// Opens (and recovers) the partition in `dir`, creating the folder when missing.
    /// `clean_shutdown`: the data directory was closed cleanly, so every byte on disk was
    /// fsynced; otherwise recovered segments are fsynced again in the background.
    static result<std::shared_ptr<partition_log>> open(std::shared_ptr<const log_env> env,
                                                       std::string dir, std::string topic,
                                                       partition_id id,
                                                       std::shared_ptr<const topic_config> cfg,
                                                       bool clean_shutdown);
    ~partition_log();
    partition_log(const partition_log&) = delete;
    partition_log& operator=(const partition_log&) = delete;

    const std::string& topic() const { return topic_; }
    partition_id partition() const { return id_; }
    const std::string& dir() const { return dir_; }

    offset log_start_offset() const;
    offset log_end_offset() const;
    /// Single node: the log end offset (every stored batch is "replicated").
    offset high_watermark() const;
    /// Offset below which every byte is fsynced.
    offset flushed_offset() const;
    std::int64_t size_bytes() const;

    /// Appends one or more complete v2 batches (a produce request's records for this
    /// partition). Rewrites base offsets, leader epochs and (LogAppendTime) timestamps in
    /// `batches` in place and writes those bytes. Errors: corrupt_message, message_too_large,
    /// invalid_record, the validator's error, disk_full, storage_error, log_closed. After a
    /// failed fsync every append fails with storage_error until the partition is reopened.
    result<append_result> append(std::span<std::byte> batches, const append_options& opts);

    /// Completes once every byte below `end` is durable as the flush policy defines (always:
    /// fsynced). Resumes on the caller's executor. Errors: disk_full or storage_error when the
    /// fsync failed (the unsynced tail was then cut off and the partition stopped taking
    /// appends), log_closed.
    boost::asio::awaitable<result<void>> flush_to(offset end);

    /// Whole batches starting with the one that contains `from`, up to max_bytes (at least one
    /// batch with min_one_batch). offset_out_of_range outside [log start, log end];
    /// from == log end gives empty records.
    result<read_result> read(offset from, std::size_t max_bytes, const read_options& opts);

    /// The first record at or after the log start whose timestamp is >= ts_ms (found through
    /// the time and offset indexes): its timestamp and offset; {-1, no_offset} when none.
    result<timestamp_and_offset> lookup_timestamp(std::int64_t ts_ms);
    /// lookup_timestamp's offset (no_offset when none).
    result<offset> offset_for_timestamp(std::int64_t ts_ms);
    /// The largest record timestamp and the offset of the record holding it (ListOffsets
    /// MAX_TIMESTAMP, KIP-734); {-1, no_offset} when the log is empty.
    timestamp_and_offset max_timestamp() const;

    /// Moves the log start offset up to `before` (-1: the high watermark); persisted before
    /// returning. offset_out_of_range when before > high watermark. Returns the log start.
    result<offset> delete_records(offset before);

    /// Calls w->notify() once after the next append, then forgets it (held weakly).
    void add_waiter(std::shared_ptr<data_waiter> w);
    /// As above, but notifies at once when the log end is already past `seen_end` (closes the
    /// race between reading "no data" and registering).
    void add_waiter(std::shared_ptr<data_waiter> w, offset seen_end);

    std::shared_ptr<const topic_config> config() const;
    void set_config(std::shared_ptr<const topic_config> cfg);

    /// Deletes whole segments by retention.ms / retention.bytes and those below the log start.
    /// Called by the log manager's background thread (or directly, with a manual clock).
    result<retention_result> apply_retention(std::int64_t now_ms);
    /// Compacts sealed segments (cleanup.policy=compact). Background thread or tests.
    result<compaction_result> compact(std::int64_t now_ms);
    /// True when compact() would find work (dirty ratio or max.compaction.lag.ms).
    bool needs_compaction(std::int64_t now_ms) const;
    /// Bumped (under the partition lock, with the segment swap) by every compaction that
    /// replaced segments since the partition was opened.
    std::uint64_t compaction_generation() const;
    /// The markers compactions removed since the partition was opened, from the `from`-th on
    /// (in removal order), appended to `out`; returns how many were removed in all. A state
    /// derived from the log (the producer state's aborted transactions) catches up with it;
    /// markers removed before the open are simply absent from the log. Only abort markers are
    /// kept: 24 bytes each, for as long as the partition stays open.
    std::size_t removed_markers(std::size_t from, std::vector<removed_marker>& out) const;
    /// The header of the batch that starts exactly at `o`; nullopt when no batch starts there
    /// (removed by compaction, never one, or outside the log). Errors: storage errors only.
    result<std::optional<protocol::kafka::batch_header>> batch_header_at(offset o);

    /// Calls fn with every batch from `from` (inclusive, snapped to its batch) to the log end,
    /// in order; stops early when fn returns false. Returns the offset after the last batch
    /// seen. For rebuilding state kept in internal compacted topics.
    result<offset> replay(offset from, const std::function<bool(protocol::bytes_view batch)>& fn);

    /// Flushes everything (blocking: call from a non-io thread at shutdown), writes the active
    /// segment's indexes, fails later calls with log_closed. With flush=false (topic deletion)
    /// nothing is synced.
    result<void> close(bool flush = true);
    bool closed() const;

    const recovery_report& recovery() const { return recovery_; }
    std::vector<segment_info> segments() const;

    // --- flusher interface ---------------------------------------------------------------
    /// Queues a sync round on the flusher (at most once at a time). Asked while a round runs,
    /// the flusher thread running it goes on with another.
    void request_sync();
    /// Group-commit rounds on a flusher thread: one, then more while they are asked for (at
    /// most max_rounds_in_a_row, then the partition queues again behind the others).
    void run_sync();
    /// True when bytes or sealed indexes await an fsync.
    bool needs_sync() const;

    struct flush_waiter {
        virtual ~flush_waiter() = default;
        /// Resumes the waiter on its own executor (posts).
        virtual void complete(result<void> r) = 0;
        /// Resumes the waiter inline: only on executor(), from a handler posted there.
        virtual void complete_here(result<void> r) = 0;
        /// Where the waiter resumes (kept as outstanding work while it waits).
        virtual const boost::asio::any_io_executor& executor() const = 0;
        offset target{0};
    };
    /// Completes waiters with one post per executor instead of one per waiter: a flush round
    /// serving several waiters of one io thread wakes that thread once.
    static void complete_grouped(std::vector<std::unique_ptr<flush_waiter>> waiters,
                                 result<void> r);

private:
    partition_log(std::shared_ptr<const log_env> env, std::string dir, std::string topic,
                  partition_id id, std::shared_ptr<const topic_config> cfg);

    result<void> recover(bool clean_shutdown);
    struct segment_check {
        enum class kind { ok, torn, corrupt } what = kind::ok;
        std::uint64_t at = 0;  // first bad byte
        const char* reason = "";
        bool was_sealed = false;  // a sealed index vouched for the segment
    };
    result<segment_check> recover_segment(segment& seg, io::file& f, std::uint64_t file_size,
                                          const topic_config& cfg);
    result<void> recover_swaps(std::vector<std::string>& names);
    result<void> complete_swap();
    void register_flush_waiter(std::unique_ptr<flush_waiter> w);
    result<std::shared_ptr<segment>> roll_locked(std::int64_t now_ms);
    std::shared_ptr<segment> active_locked() const { return segments_.back(); }
    std::size_t find_segment_locked(offset o) const;
    void fail_tail_locked(std::size_t seg_index, const std::error_code& ec);
    // After an append of `appended` bytes that ended past the zeros written ahead: writes zeros
    // from seg.allocated on (see log_env::zero_ahead_bytes). A failure only stops the zeros.
    void zero_ahead_locked(segment& seg, io::file& f, std::uint64_t appended,
                           const topic_config& cfg);
    result<void> write_log_start(offset o);
    void delete_segment_files(const std::vector<std::shared_ptr<segment>>& dead);
    std::error_code map_io_error(const std::error_code& ec, const char* what) const;
    // map_io_error for an append: a full disk is logged once per episode (appends that keep
    // failing until space returns log nothing more). Called with mu_ held.
    std::error_code append_io_error_locked(const std::error_code& ec, const char* what);
    void sync_round(bool final_close);
    void note_index_damage(const std::shared_ptr<segment>& seg);
    result<read_result> read_attempt(offset from, std::size_t max_bytes, const read_options& opts,
                                     std::vector<std::shared_ptr<segment>>& used);
    struct segment_read {
        bool found = false;  // `records` holds batches
        bool stop = false;   // nothing to return, and later segments need not be looked at
        protocol::kafka::records records;
        std::uint64_t record_count = 0;  // records in `records`' batches
    };
    result<segment_read> read_segment(const std::shared_ptr<segment>& seg, std::uint64_t size,
                                      offset from, offset limit, std::size_t max_bytes,
                                      const read_options& opts);
    void report_corruption(segment& seg, std::uint64_t at, const char* reason);
    result<timestamp_and_offset> lookup_attempt(std::int64_t ts_ms,
                                                std::vector<std::shared_ptr<segment>>& used);
    std::vector<std::shared_ptr<segment>> cleanable_locked(std::int64_t now_ms,
                                                           bool durable_only) const;
    std::shared_ptr<segment> adopt_compacted(const segment& output);
    void rebuild_damaged_indexes();

    template <typename Handler>
    class flush_op;

    const std::shared_ptr<const log_env> env_;
    const std::string dir_;
    const std::string topic_;
    const partition_id id_;

    mutable std::mutex mu_;
    std::shared_ptr<const topic_config> config_;      // guarded by mu_
    std::vector<std::shared_ptr<segment>> segments_;  // sorted by base; never empty
    offset log_start_{0};
    offset log_end_{0};
    offset flushed_{0};
    std::int64_t size_bytes_ = 0;
    bool closed_ = false;
    // Set by a failed fsync: the partition refuses appends (storage_error) until the process
    // restarts and recovers it from what is really on disk. Guarded by mu_.
    std::error_code sync_failure_;
    bool disk_full_ = false;  // the last append failed for want of space (guarded by mu_)
    std::vector<std::unique_ptr<flush_waiter>> flush_waiters_;
    std::vector<std::weak_ptr<data_waiter>> data_waiters_;
    std::size_t data_waiters_pruned_size_ = 0;

    std::mutex sync_mu_;  // one sync round at a time
    // True from request_sync() until run_sync() hands the partition back: one flusher thread
    // owns it at a time, so another never waits on sync_mu_ for the round in progress.
    std::atomic<bool> sync_queued_{false};
    std::atomic<bool> sync_again_{false};  // a round was asked for since the last one began
    std::mutex admin_mu_;        // delete_records, retention and compaction, one at a time
    offset compacted_until_{0};  // segments below were compacted in this process
    // Guarded by mu_: see compaction_generation() and removed_markers().
    std::uint64_t compaction_generation_ = 0;
    std::vector<removed_marker> removed_markers_;
    recovery_report recovery_;
};

/// A flush waiter that resumes an asio completion handler on its own executor.
template <typename Handler>
class partition_log::flush_op final : public partition_log::flush_waiter {
public:
    explicit flush_op(Handler h)
        : handler_(std::move(h)),
          work_(boost::asio::prefer(boost::asio::get_associated_executor(handler_),
                                    boost::asio::execution::outstanding_work.tracked)) {}
    void complete(result<void> r) override {
        boost::asio::post(work_, [h = std::move(handler_), r]() mutable { h(r); });
    }
    void complete_here(result<void> r) override {
        auto h = std::move(handler_);
        h(r);
    }
    const boost::asio::any_io_executor& executor() const override { return work_; }

private:
    Handler handler_;
    boost::asio::any_io_executor work_;
};

inline boost::asio::awaitable<result<void>> partition_log::flush_to(offset end) {
    auto self = shared_from_this();
    {
        std::lock_guard lock(mu_);
        if (closed_) {
            co_return fail(errc::log_closed);
        }
        if (env_->policy != flush_policy::always || end <= flushed_) {
            co_return result<void>{};
        }
    }
    auto initiate = [self](auto handler, offset target) {
        using handler_type = decltype(handler);
        auto op = std::make_unique<flush_op<handler_type>>(std::move(handler));
        op->target = target;
        self->register_flush_waiter(std::move(op));
    };
    co_return co_await boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&,
                                                   void(result<void>)>(
        initiate, boost::asio::use_awaitable, end);
}

}  // namespace sluice::backend::log
