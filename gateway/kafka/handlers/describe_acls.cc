// DescribeAcls: DESCRIBE on the cluster; the bindings Kafka's AclBindingFilter matches,
// grouped by resource; SECURITY_DISABLED when the authorizer is off.
#include <map>
#include <tuple>

#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {

/// DESCRIBE on the cluster (without an authorizer the request is refused as a whole).
void describe_acls_handler::declare(std::int16_t, const request&, access_list& out) {
    out.add_cluster(auth::acl_operation::describe);
}

boost::asio::awaitable<describe_acls_handler::response> describe_acls_handler::handle(
    request_context& ctx, request req) {
    using protocol::kafka::error_code;
    response resp;
    resp.error_message = std::nullopt;
    if (!policy_enabled(ctx)) {
        resp.error_code = error_code::security_disabled;
        resp.error_message = "no authorizer is configured on the broker";
        co_return resp;
    }
    if (ctx.verdicts().denied(0)) {
        resp.error_code = error_code::cluster_authorization_failed;
        resp.error_message = "DescribeAcls needs DESCRIBE on the cluster";
        co_return resp;
    }
    const auth::acl_binding_filter filter{
        static_cast<auth::resource_type>(req.resource_type_filter),
        std::move(req.resource_name_filter),
        static_cast<auth::pattern_type>(req.pattern_type_filter),
        std::move(req.principal_filter),
        std::move(req.host_filter),
        static_cast<auth::acl_operation>(req.operation),
        static_cast<auth::acl_permission>(req.permission_type)};
    if (auto why = auth::validate(filter)) {
        resp.error_code = error_code::invalid_request;
        resp.error_message = *why;
        co_return resp;
    }
    // Sorted bindings: those of one resource are adjacent.
    for (auto& b : ctx.svc().authz.describe_acls(filter)) {
        const auto type = static_cast<std::int8_t>(b.type);
        const auto pattern = static_cast<std::int8_t>(b.pattern);
        if (resp.resources.empty() || resp.resources.back().resource_type != type ||
            resp.resources.back().resource_name != b.name ||
            resp.resources.back().pattern_type != pattern) {
            auto& r = resp.resources.emplace_back();
            r.resource_type = type;
            r.resource_name = b.name;
            r.pattern_type = pattern;
        }
        auto& a = resp.resources.back().acls.emplace_back();
        a.principal = std::move(b.principal);
        a.host = std::move(b.host);
        a.operation = static_cast<std::int8_t>(b.operation);
        a.permission_type = static_cast<std::int8_t>(b.permission);
    }
    co_return resp;
}

}  // namespace sluice::gateway
