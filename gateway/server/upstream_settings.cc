#include "gateway/server/upstream_settings.h"

#include "gateway/core/settings.h"

namespace sluice::gateway {
namespace {

constexpr setting upstream_settings_table[] = {
    {.name = "upstream.bootstrap.servers", .type = setting_type::list,
     .doc = "`--upstream`: `HOST:PORT[,HOST:PORT...]` of a Kafka cluster: upstream mode, the "
            "HTTP, WebSocket and SSE fronts over that cluster instead of a local log, and a "
            "`--kafka` listener given explicitly as a proxy of it (SQS only with an explicit "
            "`--sqs`: every such gateway of a cluster serves its queues); librdkafka's "
            "`bootstrap.servers`",
     .shown_default = "none: native mode"},
    {.name = "upstream.request.timeout.ms", .type = setting_type::integer,
     .default_value = "30000",
     .doc = "the deadline of every call that waits for the upstream cluster (produce, fetch, "
            "admin, commits): past it the call fails with a 50x instead of hanging",
     .unit = setting_unit::milliseconds, .min = 1, .max = 3600000},
};

}  // namespace

const setting_table& upstream_setting_table() {
    static const setting_table table{.module = "upstream",
                                     .title = "Upstream mode",
                                     .settings = upstream_settings_table,
                                     .passthrough_prefix = upstream_prefix};
    return table;
}

upstream_settings read_upstream_settings(const config& cfg) {
    const config_values v(cfg);
    const auto& t = upstream_settings_table;
    upstream_settings out;
    std::string servers;
    for (const auto& one : v.get_list(t[0])) {
        servers += (servers.empty() ? "" : ",") + one;
    }
    out.bootstrap_servers = std::move(servers);
    out.request_timeout = v.get_ms(t[1]);
    for (const auto& [key, value] : cfg.properties) {
        if (!key.starts_with(upstream_prefix) || key == t[1].name) {
            continue;
        }
        std::string property = key.substr(upstream_prefix.size());
        if (property.empty()) {
            throw config_error(cfg.explain(key + ": needs a librdkafka property name after "
                                                 "'upstream.'"));
        }
        out.properties[std::move(property)] = value;
    }
    if (!out.enabled()) {
        out.properties.clear();
    } else {
        out.properties["bootstrap.servers"] = out.bootstrap_servers;
    }
    return out;
}

}  // namespace sluice::gateway
