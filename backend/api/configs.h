// Configuration entries as Kafka's admin APIs show them (DescribeConfigs): sources, types and
// synonyms. Plain values of the backend interface (owned by backend/api), apart from topics.h
// so that the code that only parses and prints configs needs nothing else of the interface.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sluice::backend::api {

/// Kafka's ConfigSource values (DescribeConfigs).
enum class config_source : std::int8_t {
    unknown = 0,
    dynamic_topic = 1,
    dynamic_broker = 2,
    dynamic_default_broker = 3,
    static_broker = 4,
    default_config = 5,
    dynamic_broker_logger = 6,
    client_metrics = 7,
    dynamic_group = 8,  // a group's own config (KIP-848; Kafka's GROUP_CONFIG)
};

/// Kafka's ConfigType values (DescribeConfigs v3+).
enum class config_type : std::int8_t {
    unknown = 0,
    boolean = 1,
    string = 2,
    int_ = 3,
    short_ = 4,
    long_ = 5,
    double_ = 6,
    list = 7,
};

struct config_synonym {
    std::string name;
    std::optional<std::string> value;
    config_source source = config_source::unknown;
};

/// One configuration entry as an administrator sees it: its value, where the value comes
/// from, its type and documentation, and its synonyms (most specific first).
struct config_entry {
    std::string name;
    std::optional<std::string> value;
    config_source source = config_source::default_config;
    bool read_only = false;
    config_type type = config_type::unknown;
    std::string documentation;
    std::vector<config_synonym> synonyms;
};

/// The dynamic broker configs (KIP-226) in Kafka's broker names (log.retention.ms,
/// message.max.bytes, ...): this broker's own (resource name = its id) and the cluster-wide
/// default (resource name ""). Precedence: broker, then default, then the static settings, then
/// Kafka's defaults.
struct dynamic_broker_configs {
    std::map<std::string, std::string> broker;
    std::map<std::string, std::string> cluster_default;
    bool operator==(const dynamic_broker_configs&) const = default;
};

}  // namespace sluice::backend::api
