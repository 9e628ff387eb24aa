// DeleteGroups: deletes empty groups and their committed offsets (tombstones in
// __consumer_offsets); a group with members is NON_EMPTY_GROUP, an unknown one
// GROUP_ID_NOT_FOUND.
#include "backend/group/group_coordinator.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"

namespace sluice::gateway {

boost::asio::awaitable<delete_groups_handler::response> delete_groups_handler::handle(
    request_context& ctx, request req) {
    response resp;
    auto results = co_await ctx.svc().groups.delete_groups(std::move(req.groups_names));
    for (auto& [group, ec] : results) {
        auto& out = resp.results.emplace_back();
        out.group_id = group;
        out.error_code = to_kafka(ec);
    }
    co_return resp;
}

}  // namespace sluice::gateway
