#include "backend/client/record_reader.h"

#include <algorithm>
#include <map>
#include <set>

#include "backend/api/records_memory.h"

namespace sluice::backend::client {
namespace api = backend::api;
namespace kafka = protocol::kafka;

boost::asio::awaitable<std::vector<partition_read>> read_records(
    api::records& records, const std::vector<read_position>& positions, read_limits limits,
    const record_sink& sink) {
    std::vector<partition_read> out(positions.size());
    for (std::size_t i = 0; i < positions.size(); ++i) {
        out[i].next = positions[i].next;
    }
    if (positions.empty()) {
        co_return out;
    }
    // One fetch topic per distinct topic, partitions in position order; remember where each
    // answer goes.
    api::fetch_request req;
    req.min_bytes = std::max(limits.min_bytes, 1);
    req.max_wait = limits.max_wait;
    req.max_bytes = limits.max_bytes;
    req.isolation = limits.isolation;
    std::map<std::string, std::size_t> topic_index;
    std::vector<std::vector<std::size_t>> order;  // per fetch topic: position indexes
    for (std::size_t i = 0; i < positions.size(); ++i) {
        const auto& p = positions[i];
        auto [it, fresh] = topic_index.emplace(p.topic.value, req.topics.size());
        if (fresh) {
            auto& t = req.topics.emplace_back();
            t.topic = p.topic;
            order.emplace_back();
        }
        req.topics[it->second].partitions.push_back(
            api::fetch_partition{p.partition, p.next, limits.partition_max_bytes});
        order[it->second].push_back(i);
    }

    api::fetch_result res = co_await records.fetch(std::move(req));
    bool stopped = false;
    for (std::size_t t = 0; t < res.topics.size() && t < order.size(); ++t) {
        const auto& ft = res.topics[t];
        for (std::size_t k = 0; k < ft.partitions.size() && k < order[t].size(); ++k) {
            const std::size_t idx = order[t][k];
            const auto& fp = ft.partitions[k];
            auto& o = out[idx];
            o.high_watermark = fp.high_watermark;
            o.log_start = fp.log_start_offset;
            if (fp.error) {
                o.error = fp.error.code;
                continue;
            }
            if (stopped || fp.records.size() == 0) {
                continue;
            }
            auto bytes = api::read_records_into_memory(fp.records);
            if (!bytes) {
                o.error = make_error_code(api::errc::storage_error);
                continue;
            }
            // read_committed: compat: Kafka's consumer (CompletedFetch) skips a producer's
            // transactional batches from the first offset of an aborted transaction up to its
            // abort marker.
            auto aborted = fp.aborted;
            std::sort(aborted.begin(), aborted.end(), [](const auto& a, const auto& b) {
                return a.first_offset < b.first_offset;
            });
            std::set<std::int64_t> aborting;
            std::size_t next_aborted = 0;
            protocol::bytes_view rest = bytes->view();
            while (!stopped && rest.size() >= kafka::batch_header_size) {
                auto header = kafka::read_batch_header(rest);
                if (!header || header->total_size() > rest.size()) {
                    break;  // a partial batch at the end of a fetch answer
                }
                const protocol::bytes_view batch = rest.first(header->total_size());
                rest = rest.subspan(header->total_size());
                while (next_aborted < aborted.size() &&
                       aborted[next_aborted].first_offset.value <= header->last_offset()) {
                    aborting.insert(aborted[next_aborted].producer.value);
                    ++next_aborted;
                }
                if (header->is_control()) {
                    aborting.erase(header->producer_id);  // a marker ends the transaction
                }
                if (header->last_offset() < o.next.value) {
                    continue;
                }
                if (header->is_control()) {
                    o.next = offset(header->last_offset() + 1);
                    continue;
                }
                if (header->is_transactional() && !aborting.empty() &&
                    aborting.contains(header->producer_id)) {
                    o.next = offset(header->last_offset() + 1);
                    continue;
                }
                auto it = kafka::record_iterator::open(batch, max_decompressed_batch);
                if (!it) {
                    o.error = make_error_code(api::errc::corrupt_message);
                    break;
                }
                kafka::record_view r;
                while (it->next(r)) {
                    if (r.offset < o.next.value) {
                        continue;
                    }
                    if (!sink(idx, r)) {
                        stopped = true;
                        break;
                    }
                    o.next = offset(r.offset + 1);
                }
                if (!stopped && !it->error()) {
                    // Compaction may leave gaps: the batch's last offset is passed either way.
                    o.next = offset(std::max(o.next.value, header->last_offset() + 1));
                }
            }
        }
    }
    co_return out;
}

}  // namespace sluice::backend::client
