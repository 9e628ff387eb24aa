// What every partition of one log_manager shares (owned by backend/log): the file cache, the
// fsync threads, the flush policy and the clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "backend/io/file_cache.h"

namespace sluice::backend::log {

class flusher;

/// When appended bytes are fsynced, and so what a completed flush_to() (acks=all) means.
/// docs/durability.md states the guarantees.
enum class flush_policy {
    /// flush_to() completes only after an fsync covering the bytes (group commit). Default:
    /// an acknowledged acks=all write survives a power loss.
    always,
    /// flush_to() completes once the bytes are written to the OS (they survive a crash of the
    /// process, not of the machine); a background fsync runs every flush interval.
    interval,
    /// flush_to() completes once written to the OS; fsync only when a segment is sealed and at
    /// close. The OS writes back when it likes.
    os,
};

/// Milliseconds since the Unix epoch (the wall clock, or a manual clock in tests).
using clock_fn = std::function<std::int64_t()>;

struct log_env {
    std::shared_ptr<io::file_cache> files;
    std::shared_ptr<flusher> fsyncs;
    flush_policy policy = flush_policy::always;
    clock_fn clock;
    /// The partition leader epoch written into every appended batch (single node: constant).
    std::int32_t leader_epoch = 0;
    /// Memory the compactor may use for its key map per pass.
    std::size_t compaction_map_bytes = 64 << 20;
    /// Zeros written ahead of the active segment's end, at most (0: never). Under
    /// flush_policy::always a small append then lands inside the file instead of growing it, and
    /// its fdatasync need not also write the inode (the file's size is unchanged): on ext4 that
    /// halves the cost of each group-commit round. See partition_log::zero_ahead_locked().
    std::uint64_t zero_ahead_bytes = 1 << 20;

    io::file_system& fs() const { return files->fs(); }
};

}  // namespace sluice::backend::log
