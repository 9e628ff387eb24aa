// The gateway's own login on its upstream connections (owned by gateway/proxy): the Kafka
// proxy's connections to the upstream brokers and the topology's refresh connections
// authenticate with the credentials librdkafka gets from the same `upstream.*` properties
// (upstream.security.protocol, upstream.sasl.mechanism, upstream.sasl.username/password),
// over protocol/'s codec: SaslHandshake v1, then SaslAuthenticate v1 until the mechanism is
// done (auth/sasl's client side: PLAIN, SCRAM-SHA-256/512), before anything else is sent.
//
// With upstream.security.protocol SSL or SASL_SSL the connections speak TLS first
// (read_upstream_tls: librdkafka's ssl.* properties, auth/tls's client context).
//
// OAUTHBEARER/GSSAPI logins and the ssl.* properties the proxy cannot honour (a PKCS#12
// keystore, a CRL, an engine) are refused by read_upstream_login / read_upstream_tls, so a
// start with a Kafka proxy listener stops saying so instead of failing each connection.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "auth/tls/tls_client_context.h"

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

/// The client TLS context of the upstream connections for upstream.security.protocol SSL or
/// SASL_SSL (upstream.ssl.*, enable.ssl.certificate.verification with librdkafka's names,
/// meanings and defaults: the system's trust store without ssl.ca.location, the broker's
/// host name verified unless ssl.endpoint.identification.algorithm=none); null for
/// PLAINTEXT and SASL_PLAINTEXT. Throws std::invalid_argument naming the property when a file
/// is bad or the proxy cannot honour what is asked.
std::shared_ptr<auth::tls_client_context> read_upstream_tls(
    const std::map<std::string, std::string>& properties);

class upstream_stream;

/// Logs in on a freshly opened upstream connection (nothing else sent on it yet). False with
/// `why` set (for the log; never a secret) when the upstream refuses or the exchange fails.
/// The caller bounds it (a deadline that closes the socket).
boost::asio::awaitable<bool> log_in_upstream(upstream_stream& s, const upstream_login& login,
                                             std::string& why);

}  // namespace sluice::gateway::proxy
