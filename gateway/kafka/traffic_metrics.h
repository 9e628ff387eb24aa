// Per-partition traffic counters of the Kafka front (bytes and records in, bytes out), and the
// /metrics collector that prints them beside each partition's offsets and size.
//
// Lifecycle: owned by run_server, registered as a collector on the metrics registry.
// Concurrency: lookups take a shared lock (creation an exclusive one, once per partition);
// counting is a relaxed atomic add.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <utility>

namespace sluice::backend::log {
class log_manager;
}

namespace sluice::gateway {

class traffic_metrics {
public:
    struct counters {
        std::atomic<std::uint64_t> bytes_in{0};
        std::atomic<std::uint64_t> records_in{0};
        std::atomic<std::uint64_t> bytes_out{0};
    };

    /// The counters of one partition, created on first use; the reference stays valid.
    counters& of(const std::string& topic, std::int32_t partition);

    /// Appends the exposition text: traffic counters and, from the log, every partition's log
    /// start/end offsets and size in bytes.
    void render(std::string& out, const backend::log::log_manager& log) const;

private:
    mutable std::shared_mutex mu_;
    std::map<std::pair<std::string, std::int32_t>, std::unique_ptr<counters>> by_partition_;
};

}  // namespace sluice::gateway
