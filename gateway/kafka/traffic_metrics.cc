#include "gateway/kafka/traffic_metrics.h"

#include <mutex>

#include <fmt/format.h>

#include "backend/log/log_manager.h"
#include "gateway/server/metrics.h"

namespace sluice::gateway {

traffic_metrics::counters& traffic_metrics::of(const std::string& topic, std::int32_t partition) {
    const auto key = std::make_pair(topic, partition);
    {
        std::shared_lock lock(mu_);
        auto it = by_partition_.find(key);
        if (it != by_partition_.end()) {
            return *it->second;
        }
    }
    std::unique_lock lock(mu_);
    auto& slot = by_partition_[key];
    if (!slot) {
        slot = std::make_unique<counters>();
    }
    return *slot;
}

void traffic_metrics::render(std::string& out, const backend::log::log_manager& log) const {
    auto labels = [](const std::string& topic, std::int32_t p) {
        return fmt::format("topic=\"{}\",partition=\"{}\"", metrics_registry::escape(topic), p);
    };
    std::string leo;
    std::string lso;
    std::string size;
    for (const auto& info : log.list_topics()) {
        for (const auto& part : log.partitions(info.name)) {
            if (!part) {
                continue;
            }
            const auto l = labels(info.name, part->partition().value);
            leo += fmt::format("sluice_partition_log_end_offset{{{}}} {}\n", l,
                               part->log_end_offset().value);
            lso += fmt::format("sluice_partition_log_start_offset{{{}}} {}\n", l,
                               part->log_start_offset().value);
            size += fmt::format("sluice_partition_size_bytes{{{}}} {}\n", l, part->size_bytes());
        }
    }
    out += "# HELP sluice_partition_log_end_offset The offset the next appended record gets.\n"
           "# TYPE sluice_partition_log_end_offset gauge\n";
    out += leo;
    out += "# HELP sluice_partition_log_start_offset The first offset still stored.\n"
           "# TYPE sluice_partition_log_start_offset gauge\n";
    out += lso;
    out += "# HELP sluice_partition_size_bytes Bytes of the partition's segments.\n"
           "# TYPE sluice_partition_size_bytes gauge\n";
    out += size;

    std::shared_lock lock(mu_);
    std::string in;
    std::string recs;
    std::string outb;
    for (const auto& [key, c] : by_partition_) {
        const auto l = labels(key.first, key.second);
        in += fmt::format("sluice_partition_bytes_in_total{{{}}} {}\n", l,
                          c->bytes_in.load(std::memory_order_relaxed));
        recs += fmt::format("sluice_partition_records_in_total{{{}}} {}\n", l,
                            c->records_in.load(std::memory_order_relaxed));
        outb += fmt::format("sluice_partition_bytes_out_total{{{}}} {}\n", l,
                            c->bytes_out.load(std::memory_order_relaxed));
    }
    out += "# HELP sluice_partition_bytes_in_total Record batch bytes appended by producers.\n"
           "# TYPE sluice_partition_bytes_in_total counter\n";
    out += in;
    out += "# HELP sluice_partition_records_in_total Records appended by producers.\n"
           "# TYPE sluice_partition_records_in_total counter\n";
    out += recs;
    out += "# HELP sluice_partition_bytes_out_total Record batch bytes returned to fetchers.\n"
           "# TYPE sluice_partition_bytes_out_total counter\n";
    out += outb;
}

}  // namespace sluice::gateway
