// How configurations look to Kafka's admin APIs (DescribeConfigs, CreateTopics v5+): topic
// configs come from the backend (api::topics::describe_configs); the broker's are the Kafka
// front's own settings plus the backend's (api::topics::backend_configs).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/kafka/request_context.h"
#include "gateway/server/services.h"
#include "auth/authorizer.h"
#include "backend/api/topics.h"
#include "protocol/kafka/error_code.h"

namespace sluice::gateway {

/// Kafka's ConfigResource types.
enum class resource_type : std::int8_t { unknown = 0, topic = 2, broker = 4, broker_logger = 8 };

/// The broker's configuration as DescribeConfigs(BROKER) shows it.
std::vector<backend::api::config_entry> describe_broker_configs(const services& svc);

/// Kafka's check for one config resource: `op` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on the topic,
/// or on the cluster for the broker and its loggers. Returns the resource's error when refused
/// (TOPIC_ or CLUSTER_AUTHORIZATION_FAILED), none when allowed or for a type no check covers
/// (the handler refuses those itself).
protocol::kafka::error_code authorize_config_resource(const request_context& ctx,
                                                      auth::acl_operation op, resource_type type,
                                                      std::string_view name);

/// What AlterConfigs and IncrementalAlterConfigs check first for each resource: ALTER_CONFIGS
/// (authorize_config_resource), then that it is a topic (broker configs are static in sluice).
/// Sets `error_code` and `error_message` of the resource's answer `out` and returns false when
/// the resource is refused.
template <typename ResourceAnswer>
bool may_alter_configs(const request_context& ctx, resource_type type, const std::string& name,
                       ResourceAnswer& out) {
    out.error_code = authorize_config_resource(ctx, auth::acl_operation::alter_configs, type,
                                               name);
    if (out.error_code != protocol::kafka::error_code::none) {
        out.error_message = "not authorized to alter the configs of " + name;
        return false;
    }
    if (type != resource_type::topic) {
        out.error_code = protocol::kafka::error_code::invalid_request;
        out.error_message = "broker configs are static in sluice: set them with --config or --set";
        return false;
    }
    return true;
}

}  // namespace sluice::gateway
