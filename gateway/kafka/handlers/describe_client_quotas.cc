// DescribeClientQuotas (KIP-546): DESCRIBE_CONFIGS on the cluster; the quotas of the entities
// the filter matches (auth/client_quotas.h). A bad filter (an unknown entity type, a repeated
// one, an unknown match type) is INVALID_REQUEST with the reason and no entries.
#include "gateway/kafka/authz.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/policy/quota_meter.h"

namespace sluice::gateway {

boost::asio::awaitable<describe_client_quotas_handler::response>
describe_client_quotas_handler::handle(request_context& ctx, request req) {
    using protocol::kafka::error_code;
    response resp;
    if (!authorize_cluster(ctx, auth::acl_operation::describe_configs)) {
        resp.error_code = error_code::cluster_authorization_failed;
        resp.error_message = "DescribeClientQuotas needs DESCRIBE_CONFIGS on the cluster";
        resp.entries = std::nullopt;
        co_return resp;
    }
    std::vector<auth::quota_filter_component> filter;
    filter.reserve(req.components.size());
    for (auto& c : req.components) {
        filter.push_back({std::move(c.entity_type), c.match_type, std::move(c.match)});
    }
    std::vector<auth::client_quotas::described> found;
    std::optional<auth::quota_error> bad;
    if (ctx.svc().quotas != nullptr) {
        bad = ctx.svc().quotas->quotas().describe(filter, req.strict, found);
    }
    if (bad) {
        resp.error_code = error_code::invalid_request;
        resp.error_message = bad->message;
        resp.entries = std::nullopt;
        co_return resp;
    }
    resp.error_code = error_code::none;
    resp.error_message = std::nullopt;
    auto& entries = resp.entries.emplace();
    entries.reserve(found.size());
    for (const auto& d : found) {
        auto& e = entries.emplace_back();
        if (d.entity.user.present) {
            e.entity.push_back({"user", d.entity.user.name, {}});
        }
        if (d.entity.client_id.present) {
            e.entity.push_back({"client-id", d.entity.client_id.name, {}});
        }
        for (const auto& [kind, value] : d.values) {
            e.values.push_back({std::string(auth::to_string(kind)), value, {}});
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
