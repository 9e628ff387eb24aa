// DescribeGroups: state, protocol and members of classic groups (metadata and assignments
// only when Stable). An unknown group (or a KIP-848 one) is "Dead"; v6+ also says
// GROUP_ID_NOT_FOUND.
#include "backend/api/groups.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/group_support.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

/// DESCRIBE on each group, in request order. The authorized operations asked for are
/// reported quietly (visible).
void describe_groups_handler::declare(std::int16_t, const request& req, access_list& out) {
    for (const auto& g : req.groups) {
        out.add(auth::acl_operation::describe, auth::resource_type::group, g);
    }
}

boost::asio::awaitable<describe_groups_handler::response> describe_groups_handler::handle(
    request_context& ctx, request req) {
    response resp;
    std::vector<group_id> ids;
    for (std::size_t gi = 0; gi < req.groups.size(); ++gi) {
        const auto& g = req.groups[gi];
        if (ctx.verdicts().denied(gi)) {
            auto& out = resp.groups.emplace_back();
            out.group_id = g;
            out.error_code = kafka::error_code::group_authorization_failed;
            continue;
        }
        ids.emplace_back(g);
    }
    if (ids.empty()) {
        co_return resp;
    }
    for (auto& d : co_await ctx.svc().groups.describe_groups(std::move(ids))) {
        auto& out = resp.groups.emplace_back();
        out.group_id = d.group_id.value;
        out.error_code = to_kafka(d.error);
        if (d.error && api::reason(d.error) == api::errc::group_id_not_found) {
            // compat: before v6 an unknown group is answered as Dead without an error.
            if (ctx.version() < 6) {
                out.error_code = kafka::error_code::none;
            } else {
                out.error_message = "Group " + d.group_id.value + " not found.";
            }
        }
        out.group_state = d.state;
        out.protocol_type = d.protocol_type;
        out.protocol_data = d.protocol_data;
        for (auto& m : d.members) {
            auto& om = out.members.emplace_back();
            om.member_id = std::move(m.member_id);
            om.group_instance_id = std::move(m.group_instance_id);
            om.client_id = std::move(m.client_id);
            om.client_host = std::move(m.client_host);
            om.member_metadata.assign(m.metadata.begin(), m.metadata.end());
            om.member_assignment.assign(m.assignment.begin(), m.assignment.end());
        }
        if (req.include_authorized_operations) {
            out.authorized_operations = authorized_operations(
                ctx, auth::resource_type::group, out.group_id, group_operations);
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
