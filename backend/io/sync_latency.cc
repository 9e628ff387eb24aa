#include "backend/io/sync_latency.h"

#include <atomic>

namespace sluice::backend::io {
namespace {

struct histogram {
    std::array<std::atomic<std::uint64_t>, sync_latency_bounds.size() + 1> buckets{};
    std::atomic<std::uint64_t> count{0};
    std::atomic<std::uint64_t> sum_ns{0};
};

histogram& of(sync_kind kind) {
    static histogram file_syncs;
    static histogram directory_syncs;
    return kind == sync_kind::file ? file_syncs : directory_syncs;
}

}  // namespace

void record_sync(sync_kind kind, std::chrono::nanoseconds took) {
    auto& h = of(kind);
    const double s = std::chrono::duration<double>(took).count();
    std::size_t i = 0;
    while (i < sync_latency_bounds.size() && s > sync_latency_bounds[i]) {
        ++i;
    }
    h.buckets[i].fetch_add(1, std::memory_order_relaxed);
    h.sum_ns.fetch_add(static_cast<std::uint64_t>(took.count() > 0 ? took.count() : 0),
                       std::memory_order_relaxed);
    h.count.fetch_add(1, std::memory_order_relaxed);
}

sync_latency_snapshot sync_latency(sync_kind kind) {
    const auto& h = of(kind);
    sync_latency_snapshot out;
    for (std::size_t i = 0; i < out.buckets.size(); ++i) {
        out.buckets[i] = h.buckets[i].load(std::memory_order_relaxed);
    }
    out.count = h.count.load(std::memory_order_relaxed);
    out.sum_seconds = static_cast<double>(h.sum_ns.load(std::memory_order_relaxed)) / 1e9;
    return out;
}

}  // namespace sluice::backend::io
