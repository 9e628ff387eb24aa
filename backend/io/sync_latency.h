// How long the real file system's syncs take: fdatasync of files and fsync of directories,
// counted in fixed latency buckets for the whole process (the native backend's fsync
// histogram on /metrics; gateway/server/server.cc renders it).
//
// Concurrency: recording and reading are relaxed atomic operations, from any thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace sluice::backend::io {

enum class sync_kind { file, directory };

/// Bucket upper bounds in seconds (Prometheus' `le`), from 100 us to 10 s.
inline constexpr std::array<double, 14> sync_latency_bounds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025,  0.05,    0.1,    0.25,  0.5,    1.0,   10.0};

struct sync_latency_snapshot {
    /// Per bucket (not cumulative); the last one counts syncs above the largest bound.
    std::array<std::uint64_t, sync_latency_bounds.size() + 1> buckets{};
    std::uint64_t count = 0;
    double sum_seconds = 0;
};

/// Counts one sync of `kind` that took `took`.
void record_sync(sync_kind kind, std::chrono::nanoseconds took);

/// What has been counted since the process started.
sync_latency_snapshot sync_latency(sync_kind kind);

}  // namespace sluice::backend::io
