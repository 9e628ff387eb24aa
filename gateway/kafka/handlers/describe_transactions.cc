// DescribeTransactions (KIP-664): the state of transactional ids, from their coordinator.
#include <map>

#include "backend/producer/transaction_coordinator.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/handlers/txn_support.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace bp = backend::producer;

boost::asio::awaitable<describe_transactions_handler::response>
describe_transactions_handler::handle(request_context& ctx, request req) {
    response resp;
    if (!has_txn(ctx)) {
        for (const auto& id : req.transactional_ids) {
            auto& s = resp.transaction_states.emplace_back();
            s.transactional_id = id;
            s.error_code = kafka::error_code::coordinator_not_available;
        }
        co_return resp;
    }
    for (auto& d : ctx.svc().txn->describe(req.transactional_ids)) {
        auto& s = resp.transaction_states.emplace_back();
        s.transactional_id = d.transactional_id;
        s.error_code = to_kafka(d.error);
        if (d.error) {
            s.producer_id = no_producer_id;
            s.producer_epoch = no_producer_epoch;
            s.transaction_start_time_ms = -1;
            continue;
        }
        s.transaction_state = bp::txn_state_name(d.state);
        s.transaction_timeout_ms = std::chrono::milliseconds(d.timeout_ms);
        s.transaction_start_time_ms = d.start_ms;
        s.producer_id = producer_id(d.producer_id);
        s.producer_epoch = producer_epoch(d.producer_epoch);
        std::map<std::string, std::vector<partition_id>> by_topic;
        for (const auto& tp : d.partitions) {
            by_topic[tp.topic].push_back(partition_id(tp.partition));
        }
        for (auto& [topic, parts] : by_topic) {
            auto& td = s.topics.emplace_back();
            td.topic = topic;
            td.partitions = std::move(parts);
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
