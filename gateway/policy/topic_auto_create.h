// Creating a topic on first use, as auto.create.topics.enable does (owned by gateway/policy):
// one code path for the Kafka front's Metadata and the HTTP front's produce calls (REST v2 and
// v3, WebSocket produce), so that both create the same topic (num.partitions partitions, the
// backend's default configs). Who may is the policy chain's to say (Kafka's rule: CREATE on
// the cluster, else CREATE on the topic; gateway/policy/chain.h, also_passes::cluster).
// Stateless; thread-safe as api::topics is.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "backend/api/topics.h"
#include "protocol/core/ids.h"

namespace sluice::gateway {

/// The settings of auto-creation (kafka_settings: auto.create.topics.enable, num.partitions).
struct topic_auto_creation {
    bool enabled = false;
    std::int32_t partitions = 1;
};

/// Creates `name` with `partitions` partitions and the default configs; a topic created
/// meanwhile by someone else is answered as found. `who` names the requester in the log line
/// ("client 'rdkafka'", "http User:alice"). Errors: those of api::topics::create
/// (invalid_topic_name, ...).
boost::asio::awaitable<backend::api::backend_result<backend::api::topic_description>>
auto_create_topic(backend::api::topics& topics, topic_name name, std::int32_t partitions,
                  std::string who);

}  // namespace sluice::gateway
