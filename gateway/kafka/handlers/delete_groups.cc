// DeleteGroups: deletes empty groups and their committed offsets (tombstones in
// __consumer_offsets); a group with members is NON_EMPTY_GROUP, an unknown one
// GROUP_ID_NOT_FOUND.
#include "backend/api/groups.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {

/// DELETE on each group, in request order.
void delete_groups_handler::declare(std::int16_t, const request& req, access_list& out) {
    for (const auto& g : req.groups_names) {
        out.add(auth::acl_operation::remove, auth::resource_type::group, g);
    }
}

boost::asio::awaitable<delete_groups_handler::response> delete_groups_handler::handle(
    request_context& ctx, request req) {
    response resp;
    std::vector<group_id> ids;
    for (std::size_t gi = 0; gi < req.groups_names.size(); ++gi) {
        auto& name = req.groups_names[gi];
        if (ctx.verdicts().denied(gi)) {
            auto& out = resp.results.emplace_back();
            out.group_id = std::move(name);
            out.error_code = protocol::kafka::error_code::group_authorization_failed;
            continue;
        }
        ids.emplace_back(std::move(name));
    }
    if (ids.empty()) {
        co_return resp;
    }
    for (auto& d : co_await ctx.svc().groups.delete_groups(std::move(ids))) {
        auto& out = resp.results.emplace_back();
        out.group_id = std::move(d.group_id.value);
        out.error_code = to_kafka(d.error);
    }
    co_return resp;
}

}  // namespace sluice::gateway
