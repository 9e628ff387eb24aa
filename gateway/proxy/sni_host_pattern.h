// proxy.sni.host.pattern (owned by gateway/proxy): the host name under which the Kafka proxy
// advertises each upstream node when one TLS port serves them all, and the way back from the
// server name a client's TLS handshake carries (SNI) to the node it asks for. Pure: no
// sockets, no logging (tests/gateway/proxy_sni_test.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::gateway::proxy {

/// A host name with one `$(nodeId)` in it, e.g. `broker-$(nodeId).kafka.example.com`: node 3
/// is `broker-3.kafka.example.com`. Server names compare without regard to case (DNS names);
/// the node id in a name is decimal without a sign or leading zeros, as host_of writes it, so
/// each node has exactly one name.
/// Immutable once parsed; copied freely.
class sni_host_pattern {
public:
    static constexpr std::string_view placeholder = "$(nodeId)";

    /// Throws std::invalid_argument (naming what is wrong) unless `pattern` holds the
    /// placeholder exactly once and otherwise only letters, digits, '-' and '.' (a host name).
    static sni_host_pattern parse(std::string_view pattern);

    /// The advertised host of node `node_id`.
    std::string host_of(std::int32_t node_id) const;
    /// The node whose name `server_name` is; nullopt for any other name.
    std::optional<std::int32_t> node_of(std::string_view server_name) const;
    /// The node a connection with TLS server name `server_name` is for, on a listener whose
    /// advertised host is `own_host`: nullopt (the bootstrap) for the listener's own name even
    /// when the pattern matches it, for other names, and for none (empty).
    std::optional<std::int32_t> route(std::string_view server_name,
                                      std::string_view own_host) const;
    /// The pattern as configured.
    std::string text() const { return prefix_ + std::string(placeholder) + suffix_; }

private:
    std::string prefix_;  // before the placeholder
    std::string suffix_;  // after it
};

}  // namespace sluice::gateway::proxy
