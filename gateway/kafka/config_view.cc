#include "gateway/kafka/config_view.h"

#include <string>

#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace api = backend::api;

void declare_config_resource(auth::acl_operation op, std::int8_t type, std::string_view name,
                             access_list& out) {
    switch (static_cast<resource_type>(type)) {
        case resource_type::topic:
            out.add(op, auth::resource_type::topic, name);
            return;
        case resource_type::broker:
        case resource_type::broker_logger:
            out.add_cluster(op);
            return;
        case resource_type::group:
            out.add(op, auth::resource_type::group, name);
            return;
        case resource_type::unknown:
            break;
    }
    out.add_none();
}

protocol::kafka::error_code config_resource_error(const request_context& ctx, std::size_t i,
                                                  resource_type type) {
    if (ctx.verdicts().allowed(i)) {
        return protocol::kafka::error_code::none;
    }
    switch (type) {
        case resource_type::topic:
            return protocol::kafka::error_code::topic_authorization_failed;
        case resource_type::broker:
        case resource_type::broker_logger:
            return protocol::kafka::error_code::cluster_authorization_failed;
        case resource_type::group:
            return protocol::kafka::error_code::group_authorization_failed;
        case resource_type::unknown:
            break;
    }
    return protocol::kafka::error_code::none;
}

std::vector<api::config_entry> describe_broker_configs(const services& svc) {
    std::vector<api::config_entry> out;
    const auto& props = svc.cfg.properties;
    auto add = [&](std::string name, std::string value, api::config_type type, std::string doc) {
        out.push_back(api::static_config_entry(std::move(name), std::move(value), type,
                                               std::move(doc), props));
    };
    using ct = api::config_type;
    const auto& k = svc.kafka;
    add("node.id", std::to_string(k.node_id), ct::int_, "The id of this broker.");
    add("broker.id", std::to_string(k.node_id), ct::int_, "The id of this broker.");
    add("num.partitions", std::to_string(k.num_partitions), ct::int_,
        "Partitions of an auto-created topic.");
    add("auto.create.topics.enable", k.auto_create_topics ? "true" : "false", ct::boolean,
        "Create unknown topics on Metadata requests.");
    add("delete.topic.enable", k.delete_topic_enable ? "true" : "false", ct::boolean,
        "Allow DeleteTopics.");
    add("socket.request.max.bytes", std::to_string(k.max_request_bytes), ct::int_,
        "The largest request frame accepted.");
    add("connections.max.idle.ms", std::to_string(k.idle_timeout_ms), ct::long_,
        "Idle connections are closed after this long.");
    for (auto& e : svc.topics.backend_configs()) {
        out.push_back(std::move(e));
    }
    return out;
}

std::vector<api::config_entry> describe_cluster_default_configs(const services& svc) {
    std::vector<api::config_entry> out;
    for (auto& e : svc.topics.backend_configs()) {
        std::vector<api::config_synonym> defaults;
        for (auto& s : e.synonyms) {
            if (s.source == api::config_source::dynamic_default_broker) {
                defaults.push_back(std::move(s));
            }
        }
        // The entry of the name set there (log.retention.hours, not log.retention.ms, when
        // only the hours were set).
        if (defaults.empty() || defaults.front().name != e.name) {
            continue;
        }
        e.value = defaults.front().value;
        e.source = api::config_source::dynamic_default_broker;
        e.synonyms = std::move(defaults);
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace sluice::gateway
