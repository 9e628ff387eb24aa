// DescribeProducers (KIP-664): the active idempotent and transactional producers of
// partitions, from each partition's producer state.
#include "backend/log/log_manager.h"
#include "backend/producer/producer_state_manager.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/handlers/txn_support.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

boost::asio::awaitable<describe_producers_handler::response> describe_producers_handler::handle(
    request_context& ctx, request req) {
    response resp;
    for (const auto& t : req.topics) {
        auto& tout = resp.topics.emplace_back();
        tout.name = t.name;
        for (auto p : t.partition_indexes) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition_index = p;
            pout.error_code = kafka::error_code::none;
            auto log = ctx.svc().log.partition(t.name, p);
            if (!log) {
                pout.error_code = kafka::error_code::unknown_topic_or_partition;
                continue;
            }
            if (!has_txn(ctx)) {
                continue;
            }
            auto st = ctx.svc().producers->state_for(log);
            if (!st) {
                pout.error_code = to_kafka(st.error());
                pout.error_message = st.error().message();
                continue;
            }
            for (const auto& d : (*st)->describe()) {
                auto& ps = pout.active_producers.emplace_back();
                ps.producer_id = producer_id(d.producer_id);
                ps.producer_epoch = d.epoch;
                ps.last_sequence = d.last_sequence;
                ps.last_timestamp = d.last_timestamp;
                ps.coordinator_epoch = d.coordinator_epoch;
                ps.current_txn_start_offset = offset(d.current_txn_start_offset);
            }
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
