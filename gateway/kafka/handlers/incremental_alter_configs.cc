// IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT on a topic's overrides, a broker's
// dynamic configs ("" for the cluster default) or a group's configs (dynamic_configs.h). Needs
// ALTER_CONFIGS on the topic, the group, or the cluster for a broker resource (checked first,
// as Kafka).
#include "backend/api/topics.h"
#include "gateway/kafka/config_view.h"
#include "gateway/kafka/dynamic_configs.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

/// ALTER_CONFIGS on each resource, in request order (declare_config_resource).
void incremental_alter_configs_handler::declare(std::int16_t, const request& req, access_list& out) {
    for (const auto& res : req.resources) {
        declare_config_resource(auth::acl_operation::alter_configs, res.resource_type, res.resource_name,
                                out);
    }
}

boost::asio::awaitable<incremental_alter_configs_handler::response>
incremental_alter_configs_handler::handle(request_context& ctx, request req) {
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
            co_await alter_dynamic_configs(ctx, type, res.resource_name, res.configs, false,
                                           req.validate_only, out);
            continue;
        }
        std::vector<api::config_change> changes;
        std::vector<audit_config_change> audited;
        bool bad = false;
        for (const auto& c : res.configs) {
            if (c.config_operation < 0 || c.config_operation > 3) {
                bad = true;
                out.error_message = "unknown config operation " +
                                    std::to_string(c.config_operation);
                break;
            }
            changes.push_back(
                {c.name, static_cast<api::config_change::op>(c.config_operation), c.value});
            static constexpr const char* op_names[] = {"set", "delete", "append", "subtract"};
            audited.push_back({c.name, op_names[c.config_operation], c.value});
        }
        if (bad) {
            out.error_code = kafka::error_code::invalid_request;
            continue;
        }
        auto altered = co_await svc.topics.alter_configs(topic_name(res.resource_name),
                                                         std::move(changes), req.validate_only);
        if (!altered) {
            out.error_code = to_kafka(altered.error().code);
            out.error_message = altered.error().message;
            continue;
        }
        if (!req.validate_only) {
            kafka_log().info("topic '{}': configs altered by client '{}'", res.resource_name,
                             ctx.client_id());
            audit_config_changed(audit_source_of(ctx), "topic:" + res.resource_name, audited);
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
