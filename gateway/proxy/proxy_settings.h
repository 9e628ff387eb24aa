// The Kafka proxy's settings (owned by gateway/proxy): where the node ports start (or the SNI
// pattern that replaces them), how often the upstream's broker list is asked, and the
// per-principal upstream credentials. Their table
// is docs/configuration.md's "proxy" section; read once at start-up by run_server in upstream
// mode.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "gateway/core/settings.h"
#include "gateway/core/config.h"
#include "gateway/proxy/sni_host_pattern.h"

namespace sluice::gateway::proxy {

struct proxy_settings {
    /// proxy.node.port.base: 0 for the default, the listener's port + 1.
    std::int32_t node_port_base = 0;
    /// proxy.metadata.refresh.ms: how often the broker list is asked (it is also learnt from
    /// every Metadata response that passes through).
    std::chrono::milliseconds metadata_refresh{30000};
    /// proxy.principal.map: the file of per-principal upstream credentials; empty for none.
    std::string principal_map_file;
    /// proxy.principal.map.unmapped=deny: a principal without an entry is refused.
    bool deny_unmapped = false;
    /// proxy.sni.host.pattern: SNI routing on each TLS listener's one port; nullopt for a port
    /// per node.
    std::optional<sni_host_pattern> sni_pattern;
    /// proxy.sasl.passthrough: SASL listeners forward the login to the upstream broker.
    bool sasl_passthrough = false;
};

const setting_table& proxy_setting_table();

/// Reads the table; throws config_error for a value out of range.
proxy_settings read_proxy_settings(const config& cfg);

}  // namespace sluice::gateway::proxy
