// AlterConfigs (the legacy, replace-everything form): a topic's override set, a broker's
// dynamic configs ("" for the cluster default) or a group's configs become exactly the configs
// in the request (dynamic_configs.h). Needs ALTER_CONFIGS on the topic, the group, or the
// cluster for a broker resource (checked first, as Kafka).
#include "backend/api/topics.h"
#include "gateway/kafka/config_view.h"
#include "gateway/kafka/dynamic_configs.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

/// ALTER_CONFIGS on each resource, in request order (declare_config_resource).
void alter_configs_handler::declare(std::int16_t, const request& req, access_list& out) {
    for (const auto& res : req.resources) {
        declare_config_resource(auth::acl_operation::alter_configs, res.resource_type, res.resource_name,
                                out);
    }
}

boost::asio::awaitable<alter_configs_handler::response> alter_configs_handler::handle(
    request_context& ctx, request req) {
    auto& svc = ctx.svc();
    response resp;
    for (std::size_t ri = 0; ri < req.resources.size(); ++ri) {
        const auto& res = req.resources[ri];
        auto& out = resp.responses.emplace_back();
        out.resource_type = res.resource_type;
        out.resource_name = res.resource_name;
        out.error_message = std::nullopt;  // compat: null when the resource is taken
        const auto type = static_cast<resource_type>(res.resource_type);
        if (!may_alter_configs(ctx, ri, type, res.resource_name, out)) {
            continue;
        }
        if (type == resource_type::broker || type == resource_type::group) {
            co_await alter_dynamic_configs(ctx, type, res.resource_name, res.configs, true,
                                           req.validate_only, out);
            continue;
        }
        std::map<std::string, std::string> overrides;
        std::vector<audit_config_change> audited;
        for (const auto& c : res.configs) {
            if (c.value) {
                overrides[c.name] = *c.value;
            }
            audited.push_back({c.name, c.value ? "set" : "delete", c.value});
        }
        const std::size_t count = overrides.size();
        auto altered = co_await svc.topics.replace_configs(
            topic_name(res.resource_name), std::move(overrides), req.validate_only);
        if (!altered) {
            out.error_code = to_kafka(altered.error().code);
            out.error_message = altered.error().message;
            continue;
        }
        if (!req.validate_only) {
            kafka_log().info("topic '{}': configs replaced by client '{}' ({} overrides)",
                             res.resource_name, ctx.client_id(), count);
            audit_config_changed(audit_source_of(ctx), "topic:" + res.resource_name, audited);
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
