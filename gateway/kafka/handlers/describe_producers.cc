// DescribeProducers (KIP-664): the active idempotent and transactional producers of
// partitions, from each partition's producer state. Needs READ on each topic (as Kafka).
#include "backend/api/transactions.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

/// READ on each topic, in request order.
void describe_producers_handler::declare(std::int16_t, const request& req, access_list& out) {
    for (const auto& t : req.topics) {
        out.add(auth::acl_operation::read, auth::resource_type::topic, t.name);
    }
}

boost::asio::awaitable<describe_producers_handler::response> describe_producers_handler::handle(
    request_context& ctx, request req) {
    response resp;
    for (std::size_t ti = 0; ti < req.topics.size(); ++ti) {
        const auto& t = req.topics[ti];
        auto& tout = resp.topics.emplace_back();
        tout.name = t.name;
        const bool allowed = ctx.verdicts().allowed(ti);
        for (auto p : t.partition_indexes) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition_index = p;
            pout.error_code = kafka::error_code::none;
            if (!allowed) {
                pout.error_code = kafka::error_code::topic_authorization_failed;
                pout.error_message = "not authorized to read topic " + t.name;
                continue;
            }
            auto producers = co_await ctx.svc().txn.describe_producers(topic_name(t.name), p);
            if (!producers) {
                pout.error_code = to_kafka(producers.error());
                pout.error_message = producers.error().code.message();
                continue;
            }
            for (const auto& d : *producers) {
                auto& ps = pout.active_producers.emplace_back();
                ps.producer_id = d.producer.id;
                ps.producer_epoch = d.producer.epoch.value;
                ps.last_sequence = d.last_sequence;
                ps.last_timestamp = d.last_timestamp;
                ps.coordinator_epoch = d.coordinator_epoch;
                ps.current_txn_start_offset = d.current_txn_start_offset;
            }
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
