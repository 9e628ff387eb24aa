// How configurations look to Kafka's admin APIs (DescribeConfigs, CreateTopics v5+): topic
// configs come from the backend (api::topics::describe_configs); the broker's are the Kafka
// front's own settings plus the backend's (api::topics::backend_configs).
#pragma once

#include <cstdint>
#include <vector>

#include "backend/api/topics.h"
#include "gateway/server/services.h"

namespace sluice::gateway {

/// Kafka's ConfigResource types.
enum class resource_type : std::int8_t { unknown = 0, topic = 2, broker = 4, broker_logger = 8 };

/// The broker's configuration as DescribeConfigs(BROKER) shows it.
std::vector<backend::api::config_entry> describe_broker_configs(const services& svc);

}  // namespace sluice::gateway
