// LeaveGroup: members leave a classic group. Up to v2 one member by id (its error is the
// response's); v3+ a list of members, by member id or by static instance id, each answered.
#include "backend/api/groups.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

/// READ on the group.
void leave_group_handler::declare(std::int16_t, const request& req, access_list& out) {
    out.add(auth::acl_operation::read, auth::resource_type::group, req.group_id);
}

boost::asio::awaitable<leave_group_handler::response> leave_group_handler::handle(
    request_context& ctx, request req) {
    if (ctx.verdicts().denied(0)) {
        response denied;
        denied.error_code = protocol::kafka::error_code::group_authorization_failed;
        co_return denied;
    }
    const std::int16_t version = ctx.version();
    std::vector<backend::api::leave_member> members;
    if (version < 3) {
        members.push_back({req.member_id, std::nullopt, std::nullopt});
    } else {
        for (auto& m : req.members) {
            members.push_back({std::move(m.member_id), std::move(m.group_instance_id),
                               std::move(m.reason)});
        }
    }
    kafka_log().debug("conn {} client '{}': LeaveGroup v{} group '{}' ({} members)",
                      ctx.connection().id, ctx.client_id(), version, req.group_id,
                      members.size());
    auto res = co_await ctx.svc().groups.leave_group(group_id(req.group_id), std::move(members));

    response resp;
    resp.error_code = to_kafka(res.error);
    if (version < 3) {
        if (!res.error && !res.members.empty()) {
            resp.error_code = to_kafka(res.members.front().error);
        }
        co_return resp;
    }
    if (!res.error) {
        for (auto& m : res.members) {
            auto& out = resp.members.emplace_back();
            out.member_id = std::move(m.member_id);
            out.group_instance_id = std::move(m.group_instance_id);
            out.error_code = to_kafka(m.error);
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
