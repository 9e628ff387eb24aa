// DeleteRecords: move a partition's log start offset forward (offset -1 = the high watermark).
#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

boost::asio::awaitable<delete_records_handler::response> delete_records_handler::handle(
    request_context& ctx, request req) {
    auto& svc = ctx.svc();
    response resp;
    for (const auto& t : req.topics) {
        auto& tout = resp.topics.emplace_back();
        tout.name = t.name;
        for (const auto& p : t.partitions) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition_index = p.partition_index;
            pout.low_watermark = offset(-1);
            auto log = svc.log.partition(t.name, p.partition_index);
            if (!log) {
                pout.error_code = kafka::error_code::unknown_topic_or_partition;
                continue;
            }
            const offset target = p.offset.value == -1 ? log->high_watermark() : p.offset;
            if (target.value < 0 || target > log->high_watermark()) {
                pout.error_code = kafka::error_code::offset_out_of_range;
                pout.low_watermark = log->log_start_offset();
                continue;
            }
            auto moved = log->delete_records(target);
            if (!moved) {
                pout.error_code = to_kafka(moved.error());
                continue;
            }
            pout.error_code = kafka::error_code::none;
            pout.low_watermark = *moved;
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
