// How configurations look to Kafka's admin APIs (DescribeConfigs, CreateTopics v5+): topic
// configs come from the backend (api::topics::describe_configs); the broker's are the Kafka
// front's own settings plus the backend's (api::topics::backend_configs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <string_view>
#include <vector>

#include "gateway/kafka/authz.h"
#include "gateway/kafka/dynamic_configs.h"
#include "gateway/kafka/logger.h"
#include "gateway/kafka/request_context.h"
#include "gateway/policy/audit.h"
#include "gateway/kafka/services.h"
#include "auth/authorizer.h"
#include "backend/api/topics.h"
#include "protocol/kafka/error_code.h"

#include <boost/asio/awaitable.hpp>

namespace sluice::gateway {

/// Kafka's ConfigResource types.
enum class resource_type : std::int8_t {
    unknown = 0,
    topic = 2,
    broker = 4,
    broker_logger = 8,
    group = 32,  // KIP-848 group configs
};

/// The broker's configuration as DescribeConfigs(BROKER "<node id>") shows it.
std::vector<backend::api::config_entry> describe_broker_configs(const services& svc);
/// The cluster-wide dynamic defaults as DescribeConfigs(BROKER "") shows them: only the
/// configs set there, each with that value and (compat: Kafka) only that synonym.
std::vector<backend::api::config_entry> describe_cluster_default_configs(const services& svc);

/// Kafka's check for one config resource: `op` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the topic,
/// or on the cluster for the broker and its loggers. Returns the resource's error when refused
/// (TOPIC_ or CLUSTER_AUTHORIZATION_FAILED), none when allowed or for a type no check covers
/// (the handler refuses those itself).
protocol::kafka::error_code authorize_config_resource(const request_context& ctx,
                                                      auth::acl_operation op, resource_type type,
                                                      std::string_view name);

/// What AlterConfigs and IncrementalAlterConfigs check first for each resource: ALTER_CONFIGS
/// (authorize_config_resource), then that sluice alters configs of its type (topics, brokers,
/// groups; not logger levels, which --log-level sets). Sets `error_code` and `error_message`
/// of the resource's answer `out` and returns false when the resource is refused.
template <typename ResourceAnswer>
bool may_alter_configs(const request_context& ctx, resource_type type, const std::string& name,
                       ResourceAnswer& out) {
    out.error_code = authorize_config_resource(ctx, auth::acl_operation::alter_configs, type,
                                               name);
    if (out.error_code != protocol::kafka::error_code::none) {
        out.error_message = "not authorized to alter the configs of " + name;
        return false;
    }
    if (type == resource_type::broker_logger) {
        out.error_code = protocol::kafka::error_code::invalid_request;
        out.error_message = "logger levels are set with --log-level in sluice";
        return false;
    }
    if (type != resource_type::topic && type != resource_type::broker &&
        type != resource_type::group) {
        out.error_code = protocol::kafka::error_code::invalid_request;
        out.error_message = "Unknown resource type " + std::to_string(static_cast<int>(type));
        return false;
    }
    return true;
}

/// AlterConfigs (`replace`) or IncrementalAlterConfigs on a BROKER or GROUP resource, once
/// may_alter_configs allowed it: the dynamic configs store checks, records and persists the
/// change (dynamic_configs.h); new broker configs are in force for every topic before the
/// answer leaves. `Config` is either request's config entry.
template <typename Config, typename ResourceAnswer>
boost::asio::awaitable<void> alter_dynamic_configs(request_context& ctx, resource_type type,
                                                   std::string name, std::vector<Config> configs,
                                                   bool replace, bool validate_only,
                                                   ResourceAnswer& out) {
    auto& svc = ctx.svc();
    if (svc.dynamic == nullptr) {
        out.error_code = protocol::kafka::error_code::invalid_request;
        out.error_message = "dynamic configs are not available";
        co_return;
    }
    std::vector<config_op> ops;
    std::vector<audit_config_change> audited;
    static constexpr const char* op_names[] = {"set", "delete", "append", "subtract"};
    for (const auto& c : configs) {
        std::int8_t operation = 0;
        if constexpr (requires { c.config_operation; }) {
            operation = c.config_operation;
        }
        if (operation < 0 || operation > 3) {
            out.error_code = protocol::kafka::error_code::invalid_request;
            out.error_message = "Unknown operations type " + std::to_string(operation);
            co_return;
        }
        ops.push_back({c.name, static_cast<config_op::kind>(operation), c.value});
        audited.push_back({c.name, op_names[operation], c.value});
    }
    const bool broker = type == resource_type::broker;
    auto outcome = broker ? svc.dynamic->alter_broker(name, ops, replace, validate_only)
                          : svc.dynamic->alter_group(name, ops, replace, validate_only);
    out.error_code = outcome.error;
    if (outcome.error != protocol::kafka::error_code::none) {
        out.error_message = outcome.message;
        kafka_log().debug("{} '{}': configs refused for client '{}': {}",
                          broker ? "broker" : "group", name, ctx.client_id(), outcome.message);
        co_return;
    }
    if (outcome.apply_needed) {
        co_await svc.topics.apply_dynamic_configs();
    }
    if (!validate_only) {
        kafka_log().info("{} '{}': dynamic configs {} by client '{}' ({} entries)",
                         broker ? "broker" : "group", name, replace ? "replaced" : "altered",
                         ctx.client_id(), ops.size());
        audit_config_changed(audit_source_of(ctx), (broker ? "broker:" : "group:") + name,
                             audited);
    }
}

}  // namespace sluice::gateway
