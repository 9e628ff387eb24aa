// ListOffsets: the earliest (-2), latest (-1), max-timestamp (-3) offset, or the first offset at
// or after a timestamp, per partition. v0 answers with a list of old-style offsets.
#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "backend/producer/producer_state_manager.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/records_io.h"
#include "protocol/kafka/compression.h"
#include "protocol/kafka/record.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

namespace {

constexpr std::int64_t latest_timestamp = -1;
constexpr std::int64_t earliest_timestamp = -2;
constexpr std::int64_t max_timestamp = -3;
constexpr std::int64_t earliest_local_timestamp = -4;
constexpr std::int64_t latest_tiered_timestamp = -5;

/// The index finds the first batch whose max timestamp reaches `target`; Kafka answers with the
/// first record in it that does, so look inside that batch. On any read problem the batch's
/// own answer stands.
void refine_to_record(backend::log::partition_log& log, std::int64_t target, offset& found,
                      std::int64_t& found_ts) {
    backend::log::read_options opts;
    opts.min_one_batch = true;
    auto got = log.read(found, 1, opts);
    if (!got) {
        return;
    }
    auto bytes = read_records_into_memory(got->records);
    if (!bytes) {
        return;
    }
    kafka::batch_cursor cursor(bytes->view());
    for (auto b = cursor.next(); !b.empty(); b = cursor.next()) {
        auto it = kafka::record_iterator::open(b, kafka::default_max_decompressed_bytes);
        if (!it) {
            return;
        }
        kafka::record_view r;
        while (it->next(r)) {
            if (r.offset >= found.value && r.timestamp >= target) {
                found = offset(r.offset);
                found_ts = r.timestamp;
                return;
            }
        }
    }
}

}  // namespace

boost::asio::awaitable<list_offsets_handler::response> list_offsets_handler::handle(request_context& ctx,
                                                                           request req) {
    auto& svc = ctx.svc();
    const std::int16_t version = ctx.version();
    response resp;
    for (const auto& t : req.topics) {
        auto& tout = resp.topics.emplace_back();
        tout.name = t.name;
        for (const auto& p : t.partitions) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition_index = p.partition_index;
            pout.error_code = kafka::error_code::none;
            auto log = svc.log.partition(t.name, p.partition_index);
            if (!log) {
                pout.error_code = kafka::error_code::unknown_topic_or_partition;
                continue;
            }
            if (p.current_leader_epoch > 0) {
                pout.error_code = kafka::error_code::unknown_leader_epoch;
                continue;
            }
            std::int64_t found_ts = -1;
            offset found(-1);
            switch (p.timestamp) {
                case latest_timestamp:
                    // read_committed readers see up to the last stable offset; without open
                    // transactions that is the high watermark.
                    found = log->high_watermark();
                    if (version >= 2 && req.isolation_level == 1 && svc.producers != nullptr) {
                        auto st = svc.producers->state_for(log);
                        if (!st) {
                            pout.error_code = to_kafka(st.error());
                            continue;
                        }
                        found = (*st)->last_stable_offset(found);
                    }
                    break;
                case earliest_timestamp:
                case earliest_local_timestamp:
                    found = log->log_start_offset();
                    break;
                case latest_tiered_timestamp:
                    // No tiered storage: nothing has been uploaded.
                    found = offset(-1);
                    break;
                case max_timestamp: {
                    const auto m = log->max_timestamp();
                    found = m.off;
                    found_ts = m.timestamp;
                    break;
                }
                default: {
                    if (p.timestamp < 0) {
                        pout.error_code = kafka::error_code::invalid_request;
                        continue;
                    }
                    auto hit = log->lookup_timestamp(p.timestamp);
                    if (!hit) {
                        pout.error_code = to_kafka(hit.error());
                        continue;
                    }
                    found = hit->off;
                    found_ts = hit->timestamp;
                    if (found.value >= 0) {
                        refine_to_record(*log, p.timestamp, found, found_ts);
                    }
                    break;
                }
            }
            if (version == 0) {
                if (found.value >= 0 && p.max_num_offsets > 0) {
                    pout.old_style_offsets.push_back(found);
                }
            } else {
                pout.offset = found;
                pout.timestamp = found_ts;
                pout.leader_epoch = found.value >= 0 ? 0 : -1;
            }
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
