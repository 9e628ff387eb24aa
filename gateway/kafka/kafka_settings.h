// The Kafka front's settings (owned by gateway/kafka): the table of what it reads (Kafka's
// broker names: num.partitions, socket.request.max.bytes, queued.max.requests, ...) and the
// reader that fills kafka_settings (services.h). Read once by run_server.
#pragma once

#include <string>

#include "backend/api/settings.h"
#include "gateway/core/config.h"
#include "gateway/kafka/services.h"

namespace sluice::gateway {

/// The Kafka front's table, in the doc's order.
const backend::api::setting_table& kafka_setting_table();

/// Reads (and checks) every Kafka front setting; throws config_error naming a bad one.
kafka_settings read_kafka_settings(const config& cfg, const std::string& cluster_id);

}  // namespace sluice::gateway
