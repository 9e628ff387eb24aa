#include "gateway/proxy/proxy_settings.h"

#include <stdexcept>

#include "gateway/core/settings.h"

namespace sluice::gateway::proxy {
namespace {

constexpr setting proxy_settings_table[] = {
    {.name = "proxy.node.port.base", .type = setting_type::integer,
     .doc = "upstream mode: upstream broker node N is served on port `proxy.node.port.base + N` "
            "of the `--kafka` listener's host, advertised with its advertised host (a broker "
            "that joins or leaves the cluster gets or loses its port without a restart)",
     .min = 1, .max = 65535, .shown_default = "the `--kafka` listener's port + 1"},
    {.name = "proxy.metadata.refresh.ms", .type = setting_type::integer,
     .default_value = "30000",
     .doc = "upstream mode: how often the Kafka proxy asks the upstream for its broker list "
            "(it also learns it from every Metadata response that passes through)",
     .unit = setting_unit::milliseconds, .min = 100, .max = 3600000},
    {.name = "proxy.principal.map", .type = setting_type::string,
     .doc = "upstream mode: a file mapping client principals to the upstream credentials the "
            "Kafka proxy logs in with on their behalf instead of the gateway's, one "
            "`User:NAME -> MECHANISM USER PASSWORD` or `User:NAME -> OAUTHBEARER file:PATH` "
            "(a token file; `upstream.security.protocol` SASL_PLAINTEXT or SASL_SSL) or "
            "`User:NAME -> CERTIFICATE CERT_FILE KEY_FILE "
            "[KEY_PASSWORD]` (SSL: a client certificate of its own) a line (docs/security.md, "
            "\"Per-principal upstream credentials\")",
     .shown_default = "none: every client with the gateway's credentials"},
    {.name = "proxy.principal.map.unmapped", .type = setting_type::string,
     .default_value = "default",
     .doc = "upstream mode: a principal without an entry in `proxy.principal.map` uses the "
            "gateway's own credentials (default) or is refused (deny: its SASL login fails; "
            "without SASL its connection closes at its first request)",
     .range = "default or deny"},
    {.name = "proxy.sni.host.pattern", .type = setting_type::string,
     .doc = "upstream mode: SNI routing. Each TLS (SSL or SASL_SSL) `--kafka` listener serves "
            "every upstream node on its one port, advertised as this host name with "
            "`$(nodeId)` replaced by the node id (e.g. `broker-$(nodeId).kafka.example.com`); "
            "the server name of a client's TLS handshake picks the node, any other name (or "
            "none) is the bootstrap. No node ports are bound; a plaintext listener refuses to "
            "start. The names must resolve to the gateway and its certificate must cover them "
            "(e.g. `*.kafka.example.com`)",
     .shown_default = "none: a port per node (`proxy.node.port.base`)"},
    {.name = "proxy.sasl.passthrough", .type = setting_type::boolean,
     .default_value = "false",
     .doc = "upstream mode: SASL_PLAINTEXT and SASL_SSL `--kafka` listeners do not terminate "
            "SASL: each client's SaslHandshake and SaslAuthenticate (after SaslHandshake v0 the "
            "bare tokens of PLAIN and SCRAM) go to its upstream broker, which authenticates it with the cluster's users and "
            "authorizes it with the cluster's ACLs (docs/security.md, \"SASL passthrough\"). "
            "Every `--kafka` listener must be SASL_PLAINTEXT or SASL_SSL, "
            "`upstream.security.protocol` SASL_PLAINTEXT or SASL_SSL (the gateway's own "
            "metadata connections log in with `upstream.sasl.*`); `authorizer.enabled` and "
            "`proxy.principal.map` cannot be on"},
};

}  // namespace

const setting_table& proxy_setting_table() {
    static const setting_table table{.module = "proxy",
                                     .title = "Kafka proxy (upstream mode)",
                                     .settings = proxy_settings_table};
    return table;
}

proxy_settings read_proxy_settings(const config& cfg) {
    const config_values v(cfg);
    const auto& t = proxy_settings_table;
    proxy_settings out;
    if (v.is_set(t[0])) {
        out.node_port_base = static_cast<std::int32_t>(v.get_int(t[0]));
    }
    out.metadata_refresh = v.get_ms(t[1]);
    out.principal_map_file = v.get_string(t[2]);
    const std::string unmapped = v.get_string(t[3]);
    if (unmapped != "default" && unmapped != "deny") {
        v.fail(t[3], "expected default or deny, got '" + unmapped + "'");
    }
    out.deny_unmapped = unmapped == "deny";
    out.sasl_passthrough = v.get_bool(t[5]);
    if (v.is_set(t[4])) {
        try {
            out.sni_pattern = sni_host_pattern::parse(v.get_string(t[4]));
        } catch (const std::invalid_argument& e) {
            v.fail(t[4], e.what());
        }
        if (out.node_port_base != 0) {
            v.fail(t[0], "no node ports are bound with proxy.sni.host.pattern (every node is "
                         "served on the listener's own port); set one of the two");
        }
    }
    return out;
}

}  // namespace sluice::gateway::proxy
