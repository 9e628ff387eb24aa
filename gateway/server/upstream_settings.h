// The settings of upstream mode (owned by gateway/server): `--upstream HOST:PORT[,...]`
// (upstream.bootstrap.servers), the deadline of every upstream call, and every other
// `upstream.<property>`, handed to librdkafka as <property> (security.protocol, sasl.*, ssl.*,
// client.id, ...). Their table is docs/configuration.md's "upstream" section. Read once at
// start-up by read_upstream_settings; run_server builds backend/upstream's options from it
// (this file sees no backend implementation: scripts/check-includes).
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "backend/api/settings.h"
#include "gateway/core/config.h"

namespace sluice::gateway {

/// The prefix every upstream setting has; the rest of the key is librdkafka's property name.
inline constexpr std::string_view upstream_prefix = "upstream.";

struct upstream_settings {
    /// upstream.bootstrap.servers: empty for the native mode (the local log).
    std::string bootstrap_servers;
    /// upstream.request.timeout.ms: the deadline of every call that waits for the cluster.
    std::chrono::milliseconds request_timeout{30000};
    /// librdkafka's properties: bootstrap.servers and every other upstream.<property> setting
    /// (prefix stripped, values unchanged); upstream.request.timeout.ms is sluice's own and
    /// not among them.
    std::map<std::string, std::string> properties;

    bool enabled() const { return !bootstrap_servers.empty(); }
};

const backend::api::setting_table& upstream_setting_table();

/// Reads the upstream table and collects the pass-through properties. Throws config_error for
/// a value out of range or an empty property name ("upstream.").
upstream_settings read_upstream_settings(const config& cfg);

}  // namespace sluice::gateway
