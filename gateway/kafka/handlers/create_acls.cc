// CreateAcls: ALTER on the cluster; each binding is stored or refused on its own
// (INVALID_REQUEST with the reason); SECURITY_DISABLED when the authorizer is off. Stored
// before the answer, in force at once.
#include <stdexcept>

#include "gateway/kafka/authz.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/logger.h"
#include "gateway/core/logger.h"

namespace sluice::gateway {

boost::asio::awaitable<create_acls_handler::response> create_acls_handler::handle(
    request_context& ctx, request req) {
    using protocol::kafka::error_code;
    response resp;
    if (auto refused = refuse_acl_change(ctx, "CreateAcls")) {
        fail_each(resp.results, req.creations.size(), refused->code, refused->message);
        co_return resp;
    }
    std::vector<auth::acl_binding> bindings;
    bindings.reserve(req.creations.size());
    for (auto& c : req.creations) {
        bindings.push_back(auth::acl_binding{static_cast<auth::resource_type>(c.resource_type),
                                             std::move(c.resource_name),
                                             static_cast<auth::pattern_type>(
                                                 c.resource_pattern_type),
                                             std::move(c.principal), std::move(c.host),
                                             static_cast<auth::acl_operation>(c.operation),
                                             static_cast<auth::acl_permission>(
                                                 c.permission_type)});
    }
    try {
        const auto results = ctx.svc().authz.create_acls(bindings);
        std::vector<auth::acl_binding> created;
        for (std::size_t i = 0; i < results.size(); ++i) {
            auto& r = resp.results.emplace_back();
            if (results[i]) {
                r.error_code = error_code::invalid_request;
                r.error_message = *results[i];
            } else {
                r.error_message = std::nullopt;
                auth_log().info("ACL added by {}: {}", ctx.principal(),
                                auth::describe(bindings[i]));
                created.push_back(bindings[i]);
            }
        }
        audit_acl_changed(audit_source_of(ctx), false, created);
    } catch (const std::runtime_error& e) {
        kafka_log().error("CreateAcls: cannot save the ACLs: {}", e.what());
        fail_each(resp.results, req.creations.size(), error_code::unknown_server_error,
                  "cannot save the ACLs");
    }
    co_return resp;
}

}  // namespace sluice::gateway
