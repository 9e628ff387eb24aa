// DescribeTransactions (KIP-664): the state of transactional ids, from their coordinator. Needs
// DESCRIBE on each transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); as in Kafka, a
// described transaction lists only the topics the principal may DESCRIBE.
#include <map>

#include "backend/api/transactions.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

/// DESCRIBE on each transactional id, in request order. The partitions of a transaction are
/// filtered quietly (visible) by DESCRIBE on their topic.
void describe_transactions_handler::declare(std::int16_t, const request& req, access_list& out) {
    for (const auto& id : req.transactional_ids) {
        out.add(auth::acl_operation::describe, auth::resource_type::transactional_id, id);
    }
}

boost::asio::awaitable<describe_transactions_handler::response>
describe_transactions_handler::handle(request_context& ctx, request req) {
    response resp;
    std::vector<transactional_id> ids;
    for (std::size_t i = 0; i < req.transactional_ids.size(); ++i) {
        const auto& id = req.transactional_ids[i];
        if (ctx.verdicts().allowed(i)) {
            ids.emplace_back(id);
            continue;
        }
        auto& s = resp.transaction_states.emplace_back();
        s.transactional_id = id;
        s.error_code = kafka::error_code::transactional_id_authorization_failed;
        s.producer_id = no_producer_id;
        s.producer_epoch = no_producer_epoch;
        s.transaction_start_time_ms = -1;
    }
    for (auto& d : co_await ctx.svc().txn.describe(std::move(ids))) {
        auto& s = resp.transaction_states.emplace_back();
        s.transactional_id = d.txn_id.value;
        s.error_code = to_kafka(d.error);
        if (d.error) {
            s.producer_id = no_producer_id;
            s.producer_epoch = no_producer_epoch;
            s.transaction_start_time_ms = -1;
            continue;
        }
        s.transaction_state = d.state;
        s.transaction_timeout_ms = std::chrono::milliseconds(d.timeout_ms);
        s.transaction_start_time_ms = d.start_ms;
        s.producer_id = d.producer.id;
        s.producer_epoch = d.producer.epoch;
        std::map<std::string, std::vector<partition_id>> by_topic;
        for (const auto& tp : d.partitions) {
            if (!visible(ctx, auth::acl_operation::describe, auth::resource_type::topic,
                         tp.topic.value)) {
                continue;
            }
            by_topic[tp.topic.value].push_back(tp.partition);
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
