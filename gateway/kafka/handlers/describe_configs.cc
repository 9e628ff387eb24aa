// DescribeConfigs: topic configs (overrides, broker defaults, built-in defaults), the broker's
// own settings (BROKER "<node id>"; the dynamic ones with their layers as synonyms), the
// cluster-wide dynamic defaults (BROKER "", only those set, as Kafka) and a group's configs
// (GROUP), with sources, synonyms, types and documentation by version. Needs DESCRIBE_CONFIGS
// on the topic or the group, or on the cluster for the broker and its loggers (as Kafka).
#include <algorithm>

#include "backend/api/topics.h"
#include "gateway/kafka/config_view.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

/// DESCRIBE_CONFIGS on each resource, in request order (declare_config_resource).
void describe_configs_handler::declare(std::int16_t, const request& req, access_list& out) {
    for (const auto& res : req.resources) {
        declare_config_resource(auth::acl_operation::describe_configs, res.resource_type, res.resource_name,
                                out);
    }
}

boost::asio::awaitable<describe_configs_handler::response> describe_configs_handler::handle(
    request_context& ctx, request req) {
    auto& svc = ctx.svc();
    const std::int16_t version = ctx.version();
    response resp;
    for (std::size_t ri = 0; ri < req.resources.size(); ++ri) {
        const auto& res = req.resources[ri];
        auto& out = resp.results.emplace_back();
        out.resource_type = res.resource_type;
        out.resource_name = res.resource_name;
        std::vector<api::config_entry> entries;
        const auto type = static_cast<resource_type>(res.resource_type);
        out.error_code = config_resource_error(ctx, ri, type);
        if (out.error_code != kafka::error_code::none) {
            out.error_message = "not authorized to describe the configs of " + res.resource_name;
            continue;
        }
        if (type == resource_type::topic) {
            auto described = co_await svc.topics.describe_configs(topic_name(res.resource_name));
            if (!described) {
                out.error_code = to_kafka(described.error().code);
                out.error_message = described.error().message;
                continue;
            }
            entries = std::move(*described);
        } else if (type == resource_type::broker) {
            if (res.resource_name.empty()) {
                entries = describe_cluster_default_configs(svc);
            } else if (res.resource_name == std::to_string(svc.kafka.node_id)) {
                entries = describe_broker_configs(svc);
            } else {
                // compat: ConfigHelper.describeConfigs.
                out.error_code = kafka::error_code::invalid_request;
                out.error_message = "Unexpected broker id, expected " +
                                    std::to_string(svc.kafka.node_id) +
                                    " or empty string, but received " + res.resource_name;
                continue;
            }
        } else if (type == resource_type::group) {
            entries = svc.groups.describe_group_configs(sluice::group_id(res.resource_name));
        } else if (type == resource_type::broker_logger) {
            // Logger levels are not exposed as configs; an empty list, as for a broker with none.
        } else {
            out.error_code = kafka::error_code::invalid_request;
            out.error_message = "unsupported resource type " + std::to_string(res.resource_type);
            continue;
        }
        for (auto& e : entries) {
            if (res.configuration_keys &&
                std::find(res.configuration_keys->begin(), res.configuration_keys->end(),
                          e.name) == res.configuration_keys->end()) {
                continue;
            }
            auto& c = out.configs.emplace_back();
            c.name = e.name;
            c.value = e.value;
            c.read_only = e.read_only;
            c.is_default = e.source == api::config_source::default_config;
            c.config_source = static_cast<std::int8_t>(e.source);
            c.is_sensitive = false;
            if (version >= 1 && req.include_synonyms) {
                for (const auto& s : e.synonyms) {
                    c.synonyms.push_back({s.name, s.value, static_cast<std::int8_t>(s.source), {}});
                }
            }
            c.config_type = static_cast<std::int8_t>(e.type);
            if (version >= 3 && req.include_documentation) {
                c.documentation = e.documentation;
            } else {
                c.documentation = std::nullopt;
            }
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
