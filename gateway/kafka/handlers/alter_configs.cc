// AlterConfigs (the legacy, replace-everything form): a topic's override set becomes exactly
// the configs in the request. Broker settings are static (set with --config/--set).
#include "backend/api/topics.h"
#include "gateway/kafka/config_view.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

boost::asio::awaitable<alter_configs_handler::response> alter_configs_handler::handle(
    request_context& ctx, request req) {
    auto& svc = ctx.svc();
    response resp;
    for (const auto& res : req.resources) {
        auto& out = resp.responses.emplace_back();
        out.resource_type = res.resource_type;
        out.resource_name = res.resource_name;
        out.error_code = kafka::error_code::none;
        const auto type = static_cast<resource_type>(res.resource_type);
        if (type != resource_type::topic) {
            out.error_code = kafka::error_code::invalid_request;
            out.error_message =
                "broker configs are static in sluice: set them with --config or --set";
            continue;
        }
        std::map<std::string, std::string> overrides;
        for (const auto& c : res.configs) {
            if (c.value) {
                overrides[c.name] = *c.value;
            }
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
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
