// DeleteRecords: move a partition's log start offset forward (offset -1 = the high watermark).
// Needs DELETE on each topic (Kafka's check); a refused topic's partitions answer
// TOPIC_AUTHORIZATION_FAILED and never reach the backend; so do the partitions of topics of
// sluice's own state, with INVALID_TOPIC_EXCEPTION.
#include "backend/api/records.h"
#include "backend/api/sluice_topics.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

/// DELETE on each topic, in request order.
void delete_records_handler::declare(std::int16_t, const request& req, access_list& out) {
    for (const auto& t : req.topics) {
        out.add(auth::acl_operation::remove, auth::resource_type::topic, t.name);
    }
}

boost::asio::awaitable<delete_records_handler::response> delete_records_handler::handle(
    request_context& ctx, request req) {
    response resp;
    std::vector<api::delete_records_request> calls;
    std::vector<bool> allowed;  // per topic of the request
    for (std::size_t ti = 0; ti < req.topics.size(); ++ti) {
        const auto& t = req.topics[ti];
        auto& tout = resp.topics.emplace_back();
        tout.name = t.name;
        allowed.push_back(ctx.verdicts().allowed(ti));
        // compat: kafka.server.ReplicaManager refuses to delete records of an internal topic
        // with INVALID_TOPIC_EXCEPTION; so are those of every topic of sluice's own state.
        const bool owned = allowed.back() && api::is_sluice_owned_topic(t.name);
        for (const auto& p : t.partitions) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition_index = p.partition_index;
            pout.low_watermark = offset(-1);
            pout.error_code = owned ? kafka::error_code::invalid_topic_exception
                                    : kafka::error_code::topic_authorization_failed;
            if (allowed.back() && !owned) {
                calls.push_back({topic_name(t.name), p.partition_index, p.offset});
            }
        }
    }
    const auto moved = co_await ctx.svc().records.delete_records(std::move(calls));
    std::size_t i = 0;
    for (std::size_t t = 0; t < resp.topics.size(); ++t) {
        if (!allowed[t] || api::is_sluice_owned_topic(resp.topics[t].name)) {
            continue;
        }
        for (auto& pout : resp.topics[t].partitions) {
            const auto& m = moved[i++];
            pout.error_code = m ? kafka::error_code::none : to_kafka(m.error());
            if (m) {
                pout.low_watermark = *m;
            }
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
