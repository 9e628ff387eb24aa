#include "gateway/kafka/config_view.h"

#include <filesystem>

namespace sluice::gateway {
namespace blog = backend::log;

std::vector<config_entry> describe_topic_configs(const services& svc,
                                                 const blog::topic_info& topic) {
    std::vector<config_entry> out;
    const auto& props = svc.cfg.properties;
    for (const auto& def : blog::topic_config_defs()) {
        config_entry e;
        e.name = std::string(def.name);
        e.value = topic.config.get(def.name);
        e.type = def.type;
        e.documentation = std::string(def.documentation);
        const auto override_it = topic.overrides.find(e.name);
        const auto broker_it =
            def.broker_key.empty() ? props.end() : props.find(std::string(def.broker_key));
        if (override_it != topic.overrides.end()) {
            e.source = config_source::dynamic_topic;
            e.synonyms.push_back({e.name, override_it->second, config_source::dynamic_topic});
        } else if (broker_it != props.end()) {
            e.source = config_source::static_broker;
        } else {
            e.source = config_source::default_config;
        }
        if (broker_it != props.end()) {
            e.synonyms.push_back({broker_it->first, broker_it->second,
                                  config_source::static_broker});
        }
        if (!def.broker_key.empty()) {
            e.synonyms.push_back({std::string(def.broker_key), std::string(def.default_value),
                                  config_source::default_config});
        } else {
            e.synonyms.push_back({e.name, std::string(def.default_value),
                                  config_source::default_config});
        }
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<config_entry> describe_broker_configs(const services& svc) {
    std::vector<config_entry> out;
    const auto& props = svc.cfg.properties;
    auto add = [&](std::string name, std::string value, blog::config_type type,
                   std::string doc) {
        config_entry e;
        e.name = std::move(name);
        auto it = props.find(e.name);
        e.source = it != props.end() ? config_source::static_broker : config_source::default_config;
        e.value = it != props.end() ? it->second : value;
        e.read_only = true;
        e.type = type;
        e.documentation = std::move(doc);
        e.synonyms.push_back({e.name, e.value, e.source});
        out.push_back(std::move(e));
    };
    using ct = blog::config_type;
    const auto& k = svc.kafka;
    add("node.id", std::to_string(k.node_id), ct::int_, "The id of this broker.");
    add("broker.id", std::to_string(k.node_id), ct::int_, "The id of this broker.");
    add("log.dirs", std::filesystem::absolute(svc.cfg.data_dir).string(), ct::string,
        "The directory holding the log (--data-dir).");
    add("num.partitions", std::to_string(k.num_partitions), ct::int_,
        "Partitions of an auto-created topic.");
    add("auto.create.topics.enable", k.auto_create_topics ? "true" : "false", ct::boolean,
        "Create unknown topics on Metadata and Produce requests.");
    add("delete.topic.enable", k.delete_topic_enable ? "true" : "false", ct::boolean,
        "Allow DeleteTopics.");
    add("socket.request.max.bytes", std::to_string(k.max_request_bytes), ct::int_,
        "The largest request frame accepted.");
    add("connections.max.idle.ms", std::to_string(k.idle_timeout_ms), ct::long_,
        "Idle connections are closed after this long.");
    add("default.replication.factor", "1", ct::int_, "Single node: always 1.");
    add("offsets.topic.replication.factor", "1", ct::short_, "Single node: always 1.");
    // The broker-level defaults of topic configs (log.retention.ms and friends).
    for (const auto& def : blog::topic_config_defs()) {
        if (def.broker_key.empty()) {
            continue;
        }
        add(std::string(def.broker_key), std::string(def.default_value), def.type,
            std::string(def.documentation));
    }
    return out;
}

}  // namespace sluice::gateway
