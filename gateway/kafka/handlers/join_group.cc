// JoinGroup: the first step of a classic rebalance. The call parks in the coordinator until
// the rebalance barrier completes (every member rejoined, or the rebalance timeout passed);
// the leader's answer lists the members and their metadata.
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
void join_group_handler::declare(std::int16_t, const request& req, access_list& out) {
    out.add(auth::acl_operation::read, auth::resource_type::group, req.group_id);
}

boost::asio::awaitable<join_group_handler::response> join_group_handler::handle(
    request_context& ctx, request req) {
    if (ctx.verdicts().denied(0)) {
        response denied;
        denied.error_code = protocol::kafka::error_code::group_authorization_failed;
        co_return denied;
    }
    const std::int16_t version = ctx.version();
    bgroup::join_group_request r;
    r.group_id = group_id(std::move(req.group_id));
    r.member_id = std::move(req.member_id);
    r.group_instance_id = std::move(req.group_instance_id);
    r.protocol_type = std::move(req.protocol_type);
    for (auto& p : req.protocols) {
        r.protocols.push_back({std::move(p.name), to_vector(p.metadata)});
    }
    r.session_timeout_ms = static_cast<std::int32_t>(req.session_timeout_ms.count());
    r.rebalance_timeout_ms =
        version >= 1 ? static_cast<std::int32_t>(req.rebalance_timeout_ms.count()) : -1;
    r.require_known_member_id = version >= 4;
    r.supports_skip_assignment = version >= 9;
    r.reason = std::move(req.reason);
    r.client = group_client(ctx);
    kafka_log().debug("conn {} client '{}': JoinGroup v{} group '{}' member '{}'",
                      ctx.connection().id, ctx.client_id(), version, r.group_id, r.member_id);

    auto res = co_await ctx.svc().groups.join_group(std::move(r));

    response resp;
    resp.error_code = to_kafka(res.error);
    resp.generation_id = res.generation_id;
    resp.protocol_type = res.protocol_type;
    // Non-nullable before v7.
    resp.protocol_name = version >= 7 ? res.protocol_name : res.protocol_name.value_or("");
    resp.leader = std::move(res.leader);
    resp.skip_assignment = res.skip_assignment;
    resp.member_id = std::move(res.member_id);
    for (auto& m : res.members) {
        auto& out = resp.members.emplace_back();
        out.member_id = std::move(m.member_id);
        out.group_instance_id = std::move(m.group_instance_id);
        out.metadata.assign(m.metadata.begin(), m.metadata.end());
    }
    co_return resp;
}

}  // namespace sluice::gateway
