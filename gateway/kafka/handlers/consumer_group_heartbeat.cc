// ConsumerGroupHeartbeat (KIP-848): join, heartbeat, change subscriptions and leave a
// consumer group in one call; the coordinator assigns partitions (uniform or range) and
// answers each member with its assignment.
#include "backend/api/groups.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/group_support.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace bgroup = backend::api;

/// READ on the group (access 0), then DESCRIBE on every subscribed topic (1 + its index), each
/// asked only when everything before it was allowed: Kafka's KIP-848 checks stop at the first
/// refusal.
void consumer_group_heartbeat_handler::declare(std::int16_t, const request& req,
                                               access_list& out) {
    auto before = out.add(auth::acl_operation::read, auth::resource_type::group, req.group_id);
    if (!req.subscribed_topic_names) {
        return;
    }
    for (const auto& n : *req.subscribed_topic_names) {
        const auto at = out.add(auth::acl_operation::describe, auth::resource_type::topic, n);
        out.only_if(before);
        before = at;
    }
}

boost::asio::awaitable<consumer_group_heartbeat_handler::response>
consumer_group_heartbeat_handler::handle(request_context& ctx, request req) {
    // The verdicts (declare): the group, then every subscribed topic up to the first refused.
    if (ctx.verdicts().denied(0)) {
        response denied;
        denied.error_code = kafka::error_code::group_authorization_failed;
        denied.error_message = std::nullopt;
        co_return denied;
    }
    if (req.subscribed_topic_names) {
        for (std::size_t ti = 0; ti < req.subscribed_topic_names->size(); ++ti) {
            const auto& n = (*req.subscribed_topic_names)[ti];
            if (ctx.verdicts().denied(1 + ti)) {
                response denied;
                denied.error_code = kafka::error_code::topic_authorization_failed;
                denied.error_message = "not authorized to describe topic " + n;
                co_return denied;
            }
        }
    }
    bgroup::consumer_heartbeat_request r;
    r.group_id = group_id(std::move(req.group_id));
    r.member_id = std::move(req.member_id);
    r.member_epoch = req.member_epoch;
    r.instance_id = std::move(req.instance_id);
    r.rack_id = std::move(req.rack_id);
    r.rebalance_timeout_ms = static_cast<std::int32_t>(req.rebalance_timeout_ms.count());
    if (req.subscribed_topic_names) {
        auto& names = r.subscribed_topic_names.emplace();
        for (auto& n : *req.subscribed_topic_names) {
            names.emplace_back(std::move(n));
        }
    }
    r.subscribed_topic_regex = std::move(req.subscribed_topic_regex);
    r.server_assignor = std::move(req.server_assignor);
    if (req.topic_partitions) {
        r.topic_partitions.emplace();
        for (const auto& tp : *req.topic_partitions) {
            auto& o = r.topic_partitions->emplace_back();
            o.topic_id = tp.topic_id;
            o.partitions.assign(tp.partitions.begin(), tp.partitions.end());
        }
    }
    r.client = group_client(ctx);
    auto res = co_await ctx.svc().groups.consumer_heartbeat(std::move(r));

    response resp;
    resp.error_code = to_kafka(res.error);
    if (!res.error.message.empty()) {
        resp.error_message = std::move(res.error.message);
    }
    if (res.error) {
        kafka_log().debug("conn {} client '{}': ConsumerGroupHeartbeat failed: {}",
                          ctx.connection().id, ctx.client_id(), res.error.code.message());
        co_return resp;
    }
    resp.member_id = std::move(res.member_id);
    resp.member_epoch = res.member_epoch;
    resp.heartbeat_interval_ms = res.heartbeat_interval_ms;
    if (res.assignment) {
        auto& a = resp.assignment.emplace();
        for (const auto& tp : *res.assignment) {
            auto& o = a.topic_partitions.emplace_back();
            o.topic_id = tp.topic_id;
            o.partitions.assign(tp.partitions.begin(), tp.partitions.end());
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
