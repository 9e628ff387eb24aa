// DeleteAcls: ALTER on the cluster; per filter (Kafka's AclBindingFilter) the bindings it
// removed, or INVALID_REQUEST for a bad filter; SECURITY_DISABLED when the authorizer is off.
// Saved before the answer, in force at once.
#include <stdexcept>

#include "gateway/kafka/authz.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/logger.h"
#include "gateway/core/logger.h"

namespace sluice::gateway {

boost::asio::awaitable<delete_acls_handler::response> delete_acls_handler::handle(
    request_context& ctx, request req) {
    using protocol::kafka::error_code;
    response resp;
    if (auto refused = refuse_acl_change(ctx, "DeleteAcls")) {
        fail_each(resp.filter_results, req.filters.size(), refused->code, refused->message);
        co_return resp;
    }
    std::vector<auth::acl_binding_filter> filters;
    filters.reserve(req.filters.size());
    for (auto& f : req.filters) {
        filters.push_back(auth::acl_binding_filter{
            static_cast<auth::resource_type>(f.resource_type_filter),
            std::move(f.resource_name_filter), static_cast<auth::pattern_type>(f.pattern_type_filter),
            std::move(f.principal_filter), std::move(f.host_filter),
            static_cast<auth::acl_operation>(f.operation),
            static_cast<auth::acl_permission>(f.permission_type)});
    }
    try {
        std::vector<auth::acl_binding> removed;
        for (auto& result : ctx.svc().authz.delete_acls(filters)) {
            auto& r = resp.filter_results.emplace_back();
            if (result.error) {
                r.error_code = error_code::invalid_request;
                r.error_message = *result.error;
                continue;
            }
            r.error_message = std::nullopt;
            for (auto& b : result.deleted) {
                auth_log().info("ACL removed by {}: {}", ctx.principal(), auth::describe(b));
                removed.push_back(b);
                auto& m = r.matching_acls.emplace_back();
                m.error_message = std::nullopt;
                m.resource_type = static_cast<std::int8_t>(b.type);
                m.resource_name = std::move(b.name);
                m.pattern_type = static_cast<std::int8_t>(b.pattern);
                m.principal = std::move(b.principal);
                m.host = std::move(b.host);
                m.operation = static_cast<std::int8_t>(b.operation);
                m.permission_type = static_cast<std::int8_t>(b.permission);
            }
        }
        audit_acl_changed(audit_source_of(ctx), true, removed);
    } catch (const std::runtime_error& e) {
        kafka_log().error("DeleteAcls: cannot save the ACLs: {}", e.what());
        fail_each(resp.filter_results, req.filters.size(), error_code::unknown_server_error,
                  "cannot save the ACLs");
    }
    co_return resp;
}

}  // namespace sluice::gateway
