// ListGroups: every group this broker coordinates, filtered by state (v4+, case-insensitive)
// and by type (v5+: "classic", "consumer").
#include "backend/api/groups.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

/// DESCRIBE on the cluster, quietly (access 0): with it every group is listed, without it
/// the listing is filtered quietly (visible) by DESCRIBE on each group.
void list_groups_handler::declare(std::int16_t, const request&, access_list& out) {
    out.add_cluster(auth::acl_operation::describe, on_denial::filter);
}

boost::asio::awaitable<list_groups_handler::response> list_groups_handler::handle(
    request_context& ctx, request req) {
    auto& groups = ctx.svc().groups;
    response resp;
    if (!groups.loaded()) {
        resp.error_code = to_kafka(make_error_code(api::errc::coordinator_loading));
        co_return resp;
    }
    resp.error_code = kafka::error_code::none;
    // DESCRIBE on the cluster lists every group; else only those the principal may describe.
    const bool all = ctx.verdicts().allowed(0);
    for (auto& g : co_await groups.list_groups(req.states_filter, req.types_filter)) {
        if (!all && !visible(ctx, auth::acl_operation::describe, auth::resource_type::group,
                             g.group_id.value)) {
            continue;
        }
        auto& out = resp.groups.emplace_back();
        out.group_id = std::move(g.group_id.value);
        out.protocol_type = std::move(g.protocol_type);
        out.group_state = std::move(g.state);
        out.group_type = std::move(g.type);
    }
    co_return resp;
}

}  // namespace sluice::gateway
