// The groups' own configs (Kafka's GroupConfig, KIP-848) behind api::groups: their checks,
// as Kafka's GroupConfig.validate, and how DescribeConfigs shows them (compat:
// ConfigHelper.createGroupConfigEntry: the group's value, then the broker setting it follows).
#include <charconv>

#include "backend/api/errc.h"
#include "backend/group/group_coordinator.h"
#include "backend/logger.h"

namespace sluice::backend::group {
namespace {

constexpr const char* group_session_config = "consumer.session.timeout.ms";
constexpr const char* group_heartbeat_config = "consumer.heartbeat.interval.ms";

api::backend_error invalid(std::string message) {
    return api::backend_error{make_error_code(api::errc::invalid_config), std::move(message)};
}

std::optional<std::int32_t> parse_positive_int(std::string_view text) {
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
        text.remove_prefix(1);
    }
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) {
        text.remove_suffix(1);
    }
    std::int32_t v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || v < 1) {
        return std::nullopt;
    }
    return v;
}

}  // namespace

api::backend_result<void> group_coordinator::set_group_configs(
    const sluice::group_id& group, std::map<std::string, std::string> configs,
    bool validate_only) {
    group_overrides o;
    for (const auto& [key, value] : configs) {
        std::optional<std::int32_t>* field = nullptr;
        if (key == group_session_config) {
            field = &o.session_timeout_ms;
        } else if (key == group_heartbeat_config) {
            field = &o.heartbeat_interval_ms;
        } else {
            return std::unexpected(invalid("Unknown group config name: " + key));
        }
        auto v = parse_positive_int(value);
        if (!v) {
            return std::unexpected(invalid("Invalid value " + value + " for configuration " + key +
                                           ": must be an integer of at least 1"));
        }
        *field = *v;
    }
    const std::int32_t session = o.session_timeout_ms.value_or(cfg_.consumer_session_timeout_ms);
    const std::int32_t heartbeat =
        o.heartbeat_interval_ms.value_or(cfg_.consumer_heartbeat_interval_ms);
    // compat: GroupConfig.validateValues, with its messages.
    if (heartbeat < cfg_.consumer_min_heartbeat_interval_ms) {
        return std::unexpected(invalid(std::string(group_heartbeat_config) +
                                       " must be greater than or equal to "
                                       "group.consumer.min.heartbeat.interval.ms"));
    }
    if (heartbeat > cfg_.consumer_max_heartbeat_interval_ms) {
        return std::unexpected(invalid(std::string(group_heartbeat_config) +
                                       " must be less than or equal to "
                                       "group.consumer.max.heartbeat.interval.ms"));
    }
    if (session < cfg_.consumer_min_session_timeout_ms) {
        return std::unexpected(invalid(std::string(group_session_config) +
                                       " must be greater than or equal to "
                                       "group.consumer.min.session.timeout.ms"));
    }
    if (session > cfg_.consumer_max_session_timeout_ms) {
        return std::unexpected(invalid(std::string(group_session_config) +
                                       " must be less than or equal to "
                                       "group.consumer.max.session.timeout.ms"));
    }
    if (session <= heartbeat) {
        return std::unexpected(
            invalid(std::string(group_session_config) + " must be greater than " + group_heartbeat_config));
    }
    if (!validate_only) {
        group_configs_.set(group.value, o);
        group_log().info("group {}: own configs set ({} of 2)", group.value, configs.size());
    }
    return {};
}

std::vector<api::config_entry> group_coordinator::describe_group_configs(
    const sluice::group_id& group) const {
    const group_overrides o = group_configs_.get(group.value);
    struct row {
        const char* name;
        const char* broker_key;
        std::optional<std::int32_t> own;
        std::int32_t broker_value;
        std::int32_t kafka_default;
        const char* doc;
    };
    const row rows[] = {
        {group_session_config, "group.consumer.session.timeout.ms", o.session_timeout_ms,
         cfg_.consumer_session_timeout_ms, 45000,
         "How long a consumer group member may go without a heartbeat before it is fenced"},
        {group_heartbeat_config, "group.consumer.heartbeat.interval.ms", o.heartbeat_interval_ms,
         cfg_.consumer_heartbeat_interval_ms, 5000,
         "The heartbeat interval given to the members of a consumer group"},
    };
    std::vector<api::config_entry> out;
    for (const auto& r : rows) {
        api::config_entry e;
        e.name = r.name;
        e.type = api::config_type::int_;
        e.documentation = r.doc;
        if (r.own) {
            e.synonyms.push_back(
                {e.name, std::to_string(*r.own), api::config_source::dynamic_group});
        }
        // The broker's value: a static setting when it differs from Kafka's default.
        e.synonyms.push_back({r.broker_key, std::to_string(r.broker_value),
                              r.broker_value != r.kafka_default
                                  ? api::config_source::static_broker
                                  : api::config_source::default_config});
        e.value = e.synonyms.front().value;
        e.source = e.synonyms.front().source;
        out.push_back(std::move(e));
    }
    return out;
}

}  // namespace sluice::backend::group
