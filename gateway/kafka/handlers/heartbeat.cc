// Heartbeat: a classic group member is alive; REBALANCE_IN_PROGRESS tells it to rejoin.
#include "backend/api/groups.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {

/// READ on the group.
void heartbeat_handler::declare(std::int16_t, const request& req, access_list& out) {
    out.add(auth::acl_operation::read, auth::resource_type::group, req.group_id);
}

boost::asio::awaitable<heartbeat_handler::response> heartbeat_handler::handle(request_context& ctx,
                                                                             request req) {
    if (ctx.verdicts().denied(0)) {
        response denied;
        denied.error_code = protocol::kafka::error_code::group_authorization_failed;
        co_return denied;
    }
    backend::api::heartbeat_request r;
    r.group_id = group_id(std::move(req.group_id));
    r.generation_id = req.generation_id;
    r.member_id = std::move(req.member_id);
    r.group_instance_id = std::move(req.group_instance_id);
    auto beat = co_await ctx.svc().groups.heartbeat(std::move(r));
    response resp;
    resp.error_code = beat ? protocol::kafka::error_code::none : to_kafka(beat.error());
    co_return resp;
}

}  // namespace sluice::gateway
