// The gateway's own login on its upstream connections (owned by gateway/proxy): the Kafka
// proxy's connections to the upstream brokers and the topology's refresh connections
// authenticate with the credentials librdkafka gets from the same `upstream.*` properties
// (upstream.security.protocol, upstream.sasl.mechanism, upstream.sasl.username/password),
// over protocol/'s codec: SaslHandshake v1, then SaslAuthenticate v1 until the mechanism is
// done (auth/sasl's client side: PLAIN, SCRAM-SHA-256/512, and OAUTHBEARER with a token read
// from upstream.sasl.oauthbearer.token.endpoint.url=file:PATH at each login, the file
// backend/upstream's librdkafka clients read too), before anything else is sent.
//
// With upstream.security.protocol SSL or SASL_SSL the connections speak TLS first
// (read_upstream_tls: librdkafka's ssl.* properties, auth/tls's client context).
//
// GSSAPI, OAUTHBEARER without a token file (librdkafka's unsecured JWTs and OIDC token
// requests) and the ssl.* properties the proxy cannot honour (a PKCS#12
// keystore, a CRL, an engine) are refused by read_upstream_login / read_upstream_tls, so a
// start with a Kafka proxy listener stops saying so instead of failing each connection.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "auth/tls/tls_client_context.h"

namespace sluice::gateway::proxy {

struct upstream_login {
    /// PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER; empty: no SASL login.
    std::string mechanism;
    std::string username;
    std::string password;
    /// OAUTHBEARER: the file the token is read from at each login (Kafka's
    /// sasl.oauthbearer.token.endpoint.url with a file: URL), so that a token written anew by
    /// whoever renews it is used by the next upstream connection.
    std::string token_file;
    /// The client TLS context of this login's connections when it has a certificate of its
    /// own (proxy.principal.map's CERTIFICATE entries, upstream.security.protocol SSL: the
    /// broker takes the certificate's subject as the principal); null: the gateway's
    /// (upstream.ssl.*).
    std::shared_ptr<auth::tls_client_context> tls;

    /// Whether a SASL login follows the connection's opening.
    bool enabled() const { return !mechanism.empty(); }
};

/// From librdkafka's properties (upstream.* with the prefix stripped). Throws
/// std::invalid_argument naming the property when the proxy cannot speak what they ask for.
upstream_login read_upstream_login(const std::map<std::string, std::string>& properties);

/// The client TLS settings of the upstream connections for upstream.security.protocol SSL or
/// SASL_SSL, as read_upstream_tls reads them (nothing built yet); nullopt for PLAINTEXT and
/// SASL_PLAINTEXT. Throws std::invalid_argument naming a property the proxy cannot honour.
std::optional<auth::tls_client_settings> read_upstream_tls_settings(
    const std::map<std::string, std::string>& properties);

/// Builds a client context from such settings. Throws std::invalid_argument naming the
/// property and file (a file that cannot be read, a key that does not match its certificate or
/// its password; never the password itself).
std::shared_ptr<auth::tls_client_context> build_upstream_tls(const auth::tls_client_settings& s);

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
