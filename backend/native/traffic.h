// Per-partition traffic counters of the native backend (bytes and records appended, bytes
// read), counted by every front's produce and fetch calls and shown by
// api::topics::partition_states() (owned by backend/native).
//
// Concurrency: lookups take a shared lock (creation an exclusive one, once per partition);
// counting is a relaxed atomic add. Counters are never removed (a deleted and re-created topic
// continues its counters, as Prometheus counters should).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <utility>

#include "protocol/core/ids.h"

namespace sluice::backend::native {

class traffic {
public:
    struct counters {
        std::atomic<std::uint64_t> bytes_in{0};
        std::atomic<std::uint64_t> records_in{0};
        std::atomic<std::uint64_t> bytes_out{0};
        std::atomic<std::uint64_t> records_out{0};
    };

    /// The counters of one partition, created on first use; the reference stays valid.
    counters& of(const std::string& topic, partition_id partition);
    /// The counters of one partition, or nullptr when it has none yet.
    const counters* find(const std::string& topic, partition_id partition) const;

private:
    mutable std::shared_mutex mu_;
    std::map<std::pair<std::string, std::int32_t>, std::unique_ptr<counters>> by_partition_;
};

}  // namespace sluice::backend::native
