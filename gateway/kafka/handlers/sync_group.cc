// SyncGroup: the second step of a classic rebalance. The leader brings every member's
// assignment; each member (the leader too) gets its own back once the leader's has arrived
// and the generation is stored.
#include "backend/api/groups.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/group_support.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace bgroup = backend::api;

/// READ on the group.
void sync_group_handler::declare(std::int16_t, const request& req, access_list& out) {
    out.add(auth::acl_operation::read, auth::resource_type::group, req.group_id);
}

boost::asio::awaitable<sync_group_handler::response> sync_group_handler::handle(
    request_context& ctx, request req) {
    if (ctx.verdicts().denied(0)) {
        response denied;
        denied.error_code = protocol::kafka::error_code::group_authorization_failed;
        co_return denied;
    }
    bgroup::sync_group_request r;
    r.group_id = group_id(std::move(req.group_id));
    r.generation_id = req.generation_id;
    r.member_id = std::move(req.member_id);
    r.group_instance_id = std::move(req.group_instance_id);
    r.protocol_type = std::move(req.protocol_type);
    r.protocol_name = std::move(req.protocol_name);
    for (auto& a : req.assignments) {
        r.assignments[a.member_id] = to_vector(a.assignment);
    }
    kafka_log().debug("conn {} client '{}': SyncGroup v{} group '{}' member '{}' generation {}",
                      ctx.connection().id, ctx.client_id(), ctx.version(), r.group_id,
                      r.member_id, r.generation_id);

    auto res = co_await ctx.svc().groups.sync_group(std::move(r));

    response resp;
    resp.error_code = to_kafka(res.error);
    resp.protocol_type = std::move(res.protocol_type);
    resp.protocol_name = std::move(res.protocol_name);
    resp.assignment.assign(res.assignment.begin(), res.assignment.end());
    co_return resp;
}

}  // namespace sluice::gateway
