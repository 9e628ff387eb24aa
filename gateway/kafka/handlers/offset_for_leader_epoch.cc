// OffsetForLeaderEpoch: the end offset of a leader epoch. This broker has led every partition
// since its creation in epoch 0, so epoch 0 ends at the log end offset.
#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "gateway/kafka/handlers/registry.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

constexpr std::int32_t current_leader_epoch = 0;

boost::asio::awaitable<offset_for_leader_epoch_handler::response> offset_for_leader_epoch_handler::handle(
    request_context& ctx, request req) {
    auto& svc = ctx.svc();
    response resp;
    for (const auto& t : req.topics) {
        auto& tout = resp.topics.emplace_back();
        tout.topic = t.topic;
        for (const auto& p : t.partitions) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition = p.partition;
            pout.error_code = kafka::error_code::none;
            auto log = svc.log.partition(t.topic, p.partition);
            if (!log) {
                pout.error_code = kafka::error_code::unknown_topic_or_partition;
                continue;
            }
            if (p.current_leader_epoch > current_leader_epoch) {
                pout.error_code = kafka::error_code::unknown_leader_epoch;
                continue;
            }
            if (p.current_leader_epoch >= 0 && p.current_leader_epoch < current_leader_epoch) {
                pout.error_code = kafka::error_code::fenced_leader_epoch;
                continue;
            }
            if (p.leader_epoch > current_leader_epoch || p.leader_epoch < 0) {
                pout.leader_epoch = -1;  // compat: UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET
                pout.end_offset = offset(-1);
                continue;
            }
            pout.leader_epoch = current_leader_epoch;
            pout.end_offset = log->log_end_offset();
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
