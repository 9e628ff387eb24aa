// OffsetDelete (KIP-496): deletes a group's committed offsets for topics it no longer
// consumes (GROUP_SUBSCRIBED_TO_TOPIC otherwise).
#include "backend/api/groups.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {

/// DELETE on the group (access 0), then READ on each topic (1 + its index), asked only when
/// the group was allowed.
void offset_delete_handler::declare(std::int16_t, const request& req, access_list& out) {
    const auto group = out.add(auth::acl_operation::remove, auth::resource_type::group,
                               req.group_id);
    for (const auto& t : req.topics) {
        out.add(auth::acl_operation::read, auth::resource_type::topic, t.name);
        out.only_if(group);
    }
}

boost::asio::awaitable<offset_delete_handler::response> offset_delete_handler::handle(
    request_context& ctx, request req) {
    if (ctx.verdicts().denied(0)) {
        response denied;
        denied.error_code = protocol::kafka::error_code::group_authorization_failed;
        co_return denied;
    }
    std::vector<backend::api::topic_partition_list> topics;
    response refused;
    for (std::size_t ti = 0; ti < req.topics.size(); ++ti) {
        const auto& t = req.topics[ti];
        if (ctx.verdicts().denied(1 + ti)) {
            auto& out = refused.topics.emplace_back();
            out.name = t.name;
            for (const auto& p : t.partitions) {
                out.partitions.push_back(
                    {p.partition_index, protocol::kafka::error_code::topic_authorization_failed,
                     {}});
            }
            continue;
        }
        auto& ft = topics.emplace_back();
        ft.topic = topic_name(t.name);
        for (const auto& p : t.partitions) {
            ft.partitions.push_back(p.partition_index);
        }
    }
    auto res = co_await ctx.svc().groups.delete_offsets(group_id(req.group_id), std::move(topics));
    response resp;
    resp.error_code = to_kafka(res.error);
    if (!res.error) {
        for (const auto& t : res.topics) {
            auto& out = resp.topics.emplace_back();
            out.name = t.topic.value;
            for (const auto& p : t.partitions) {
                out.partitions.push_back({p.partition, to_kafka(p.error), {}});
            }
        }
        for (auto& t : refused.topics) {
            resp.topics.push_back(std::move(t));
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
