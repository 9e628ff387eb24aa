// The gateway's own login on its upstream connections (owned by gateway/proxy): the Kafka
// proxy's connections to the upstream brokers and the topology's refresh connections
// authenticate with the credentials librdkafka gets from the same `upstream.*` properties
// (upstream.security.protocol, upstream.sasl.mechanism, upstream.sasl.username/password),
// over protocol/'s codec: SaslHandshake v1, then SaslAuthenticate v1 until the mechanism is
// done (auth/sasl's client side: PLAIN, SCRAM-SHA-256/512), before anything else is sent.
//
// TLS to the upstream (SSL, SASL_SSL) and OAUTHBEARER/GSSAPI logins are not spoken by the
// proxy yet: read_upstream_login refuses them, so a start with a Kafka proxy listener stops
// saying so instead of failing each connection.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace sluice::gateway::proxy {

struct upstream_login {
    /// PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty: the upstream is PLAINTEXT, no login.
    std::string mechanism;
    std::string username;
    std::string password;

    bool enabled() const { return !mechanism.empty(); }
};

/// From librdkafka's properties (upstream.* with the prefix stripped). Throws
/// std::invalid_argument naming the property when the proxy cannot speak what they ask for.
upstream_login read_upstream_login(const std::map<std::string, std::string>& properties);

/// Logs in on a freshly connected upstream socket (nothing else sent on it yet). False with
/// `why` set (for the log; never a secret) when the upstream refuses or the exchange fails.
/// The caller bounds it (a deadline that closes the socket).
boost::asio::awaitable<bool> log_in_upstream(boost::asio::ip::tcp::socket& s,
                                             const upstream_login& login, std::string& why);

}  // namespace sluice::gateway::proxy
