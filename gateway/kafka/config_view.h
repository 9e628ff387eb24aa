// How topic and broker configurations look to Kafka's admin APIs (DescribeConfigs,
// CreateTopics v5+): each entry's value, where it comes from (Kafka's ConfigSource), type,
// documentation and synonyms.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/log/log_manager.h"
#include "backend/log/topic_config.h"
#include "gateway/server/services.h"

namespace sluice::gateway {

/// Kafka's ConfigSource values.
enum class config_source : std::int8_t {
    unknown = 0,
    dynamic_topic = 1,
    dynamic_broker = 2,
    dynamic_default_broker = 3,
    static_broker = 4,
    default_config = 5,
};

/// Kafka's ConfigResource types.
enum class resource_type : std::int8_t { unknown = 0, topic = 2, broker = 4, broker_logger = 8 };

struct config_synonym {
    std::string name;
    std::optional<std::string> value;
    config_source source;
};

struct config_entry {
    std::string name;
    std::optional<std::string> value;
    config_source source = config_source::default_config;
    bool read_only = false;
    backend::log::config_type type = backend::log::config_type::unknown;
    std::string documentation;
    std::vector<config_synonym> synonyms;  // most specific first, the entry's own source first
};

/// Every topic config of `topic` (its overrides, the broker defaults, the built-in defaults).
std::vector<config_entry> describe_topic_configs(const services& svc,
                                                 const backend::log::topic_info& topic);

/// The broker's configuration as DescribeConfigs(BROKER) shows it.
std::vector<config_entry> describe_broker_configs(const services& svc);

}  // namespace sluice::gateway
