// One segment of a partition's log: a .log file of record batches and its two sparse indexes
// (owned by backend/log; used only by partition_log).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "backend/io/file_cache.h"
#include "backend/log/sparse_index.h"
#include "protocol/core/ids.h"
#include "protocol/core/result.h"
#include "protocol/kafka/record_batch.h"

namespace sluice::backend::log {

/// The state of a segment at its last successful fsync (what survives a power loss).
struct sync_point {
    std::uint64_t size = 0;
    offset next_offset{0};
    std::int64_t max_timestamp = -1;
    offset max_timestamp_offset{-1};
};

/// A run of batches in a file, named by the base offset of its first batch.
///
/// Files, in the partition's folder:
///   00000000000000000042.log        record batches (v2) exactly as appended, back to back;
///                                   the active one may end in zeros written ahead (`allocated`)
///   00000000000000000042.index      sparse offset index (sparse_index.h)
///   00000000000000000042.timeindex  sparse time index (sparse_index.h)
/// The name is the base offset in 20 decimal digits. Batches are written at the end only; a
/// sealed segment never changes again except by being deleted or replaced whole (compaction).
///
/// Lifecycle: created by partition_log at open (recovery), on roll and by compaction; shared
/// (shared_ptr) with readers, which keep reading a deleted segment through their open file.
/// Concurrency: the fields below are guarded by the owning partition's mutex; the indexes and
/// the file cache lock themselves; bytes below a snapshot of `size` never change, so readers
/// pread them without the partition lock.
class segment {
public:
    segment(std::shared_ptr<io::file_cache> cache, const std::string& dir, offset base);

    offset base_offset() const { return base_; }
    /// "00000000000000000042" + ext (".log", ".index", ".timeindex").
    static std::string file_name(offset base, std::string_view ext);

    io::cached_file& log_file() { return log_; }
    sparse_index& offset_index() { return offsets_; }
    sparse_index& time_index() { return times_; }

    /// Adds index entries for a batch appended at `position` (before `size` grows past it).
    void index_batch(const protocol::kafka::batch_header& h, std::uint64_t position,
                     std::int32_t index_interval_bytes);
    /// The header a sealed index carries for this segment's current state.
    index_header sealed_header() const;
    /// Restores the in-memory state to `p` (after truncating the file to p.size).
    void reset_to(const sync_point& p);

    // --- state, guarded by the partition mutex -------------------------------------------
    std::uint64_t size = 0;                 // bytes of whole batches
    std::uint64_t allocated = 0;            // file length: size, then zeros written ahead
    offset next_offset;                     // one past the last batch's last offset
    std::int64_t max_timestamp = -1;        // largest batch max_timestamp (-1: none yet)
    offset max_timestamp_offset{-1};        // first offset of the batch holding max_timestamp
    std::int64_t first_append_ms = -1;      // clock time of the first batch (segment.ms roll)
    std::uint64_t last_index_position = 0;  // position of the last offset index entry
    bool has_index_entry = false;
    std::int64_t last_time_entry = -1;       // key of the last time index entry
    bool sealed = false;                     // no more appends
    bool seal_persisted = false;             // fsynced and sealed indexes written
    bool dir_durable = false;                // its name survives a crash (directory synced)
    bool force_sync = false;                 // recovered after a crash: fsync before trusting
    bool zero_ahead_failed = false;          // writing zeros ahead failed (disk full): stopped
    std::atomic<bool> deleted{false};        // removed by retention/compaction (skip sealing)
    std::atomic<bool> index_rebuild{false};  // a damaged index awaits a rebuild (flusher)
    sync_point synced;                       // state at the last fsync
    /// Position of the first batch found corrupt (reads stop there); -1 when none.
    std::atomic<std::int64_t> corrupt_at{-1};
    /// The byte range [lo, hi) whose CRCs were checked in this process (on append, by a
    /// recovery scan, by an earlier read); reads check CRCs outside it before serving.
    bool is_verified(std::uint64_t from, std::uint64_t to) const;
    /// Records that [from, to) was checked; joins the known range when they touch.
    void mark_verified(std::uint64_t from, std::uint64_t to);

private:
    mutable std::mutex verify_mu_;
    std::uint64_t verified_lo_ = 0;
    std::uint64_t verified_hi_ = 0;
    offset base_;
    io::cached_file log_;
    sparse_index offsets_;
    sparse_index times_;
};

/// Recomputes a sealed segment's index entries from its bytes (CRCs checked) and rewrites its
/// index files sealed. Used when a lookup found an index damaged; runs on a flusher thread.
result<void> rebuild_sealed_index(segment& seg, std::shared_ptr<io::file_cache> cache,
                                  const std::string& dir, const index_header& header,
                                  std::int32_t index_interval_bytes);

/// Walks the batches of a segment file from a position, reading ahead in large blocks.
/// Header checks always run (magic, length, offsets in order); with verify_crc each batch's
/// CRC-32C is checked too (recovery, index rebuilds).
class batch_scanner {
public:
    batch_scanner(io::file& f, std::uint64_t start, std::uint64_t end, bool verify_crc,
                  offset min_next_offset);

    enum class outcome {
        batch,      // next() produced a batch
        end,        // reached `end` exactly
        truncated,  // the bytes left do not hold a whole batch (a torn tail)
        corrupt,    // a header or CRC check failed
    };
    struct item {
        std::uint64_t position = 0;
        protocol::kafka::batch_header header;
    };
    /// The next batch, or why there is none. I/O errors are returned as errors.
    result<outcome> next(item& out);
    /// Where the next batch starts (after the last one returned).
    std::uint64_t position() const { return pos_; }
    /// The bytes of the batch next() returned last (verify_crc scanners only; valid until the
    /// next call).
    protocol::bytes_view last_batch() const { return last_; }
    /// A short description of why the scan stopped with truncated or corrupt.
    const char* reason() const { return reason_; }

private:
    result<bool> fill(std::uint64_t pos, std::size_t need);

    io::file& file_;
    std::uint64_t pos_;
    std::uint64_t end_;
    bool verify_crc_;
    offset min_next_;
    std::vector<std::byte> buf_;
    std::uint64_t buf_pos_ = 0;  // file position of buf_[0]
    std::size_t buf_len_ = 0;
    protocol::bytes_view last_;
    const char* reason_ = "";
};

}  // namespace sluice::backend::log
