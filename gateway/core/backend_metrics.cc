#include "gateway/core/backend_metrics.h"

#include <fmt/format.h>

#include "gateway/core/metrics.h"

namespace sluice::gateway {

void render_partition_metrics(const backend::api::topics& topics,
                              const backend::api::records& records, std::string& out) {
    std::string leo;
    std::string lso;
    std::string size;
    std::string in;
    std::string recs;
    std::string outb;
    std::string recs_out;
    for (const auto& p : topics.partition_states()) {
        const auto l = fmt::format("topic=\"{}\",partition=\"{}\"",
                                   metrics_registry::escape(p.topic.value), p.partition.value);
        leo += fmt::format("sluice_partition_log_end_offset{{{}}} {}\n", l, p.log_end_offset.value);
        lso += fmt::format("sluice_partition_log_start_offset{{{}}} {}\n", l,
                           p.log_start_offset.value);
        size += fmt::format("sluice_partition_size_bytes{{{}}} {}\n", l, p.size_bytes);
        // Counters appear once the partition has seen traffic (as before the backend counted).
        if (p.bytes_in > 0 || p.bytes_out > 0) {
            in += fmt::format("sluice_partition_bytes_in_total{{{}}} {}\n", l, p.bytes_in);
            recs += fmt::format("sluice_partition_records_in_total{{{}}} {}\n", l, p.records_in);
            outb += fmt::format("sluice_partition_bytes_out_total{{{}}} {}\n", l, p.bytes_out);
            recs_out +=
                fmt::format("sluice_partition_records_out_total{{{}}} {}\n", l, p.records_out);
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
    out += "# HELP sluice_partition_bytes_in_total Record batch bytes appended by producers.\n"
           "# TYPE sluice_partition_bytes_in_total counter\n";
    out += in;
    out += "# HELP sluice_partition_records_in_total Records appended by producers.\n"
           "# TYPE sluice_partition_records_in_total counter\n";
    out += recs;
    out += "# HELP sluice_partition_bytes_out_total Record batch bytes returned to fetchers.\n"
           "# TYPE sluice_partition_bytes_out_total counter\n";
    out += outb;
    out += "# HELP sluice_partition_records_out_total Records returned to fetchers (whole "
           "batches).\n# TYPE sluice_partition_records_out_total counter\n";
    out += recs_out;
    out += fmt::format(
        "# HELP sluice_fetch_parked Fetch requests parked, waiting for data or their deadline.\n"
        "# TYPE sluice_fetch_parked gauge\n"
        "sluice_fetch_parked {}\n",
        records.parked_fetches());
}

}  // namespace sluice::gateway
