// The gateway's own login on its upstream connections (owned by gateway/proxy): the Kafka
// proxy's connections to the upstream brokers and the topology's refresh connections
// authenticate with the credentials librdkafka gets from the same `upstream.*` properties
// (upstream.security.protocol, upstream.sasl.mechanism, upstream.sasl.username/password),
// over protocol/'s codec: SaslHandshake v1, then SaslAuthenticate v1 until the mechanism is
// done (auth/sasl's client side: PLAIN, SCRAM-SHA-256/512, and OAUTHBEARER with a token read
// from upstream.sasl.oauthbearer.token.endpoint.url=file:PATH at each login, the file
// backend/upstream's librdkafka clients read too), before anything else is sent; and again on
// a proxy connection whose session the upstream limits (KIP-368 re-authentication:
// upstream_sasl_exchange's frames between forwarded requests, due at reauth_delay).
//
// With upstream.security.protocol SSL or SASL_SSL the connections speak TLS first
// (read_upstream_tls: librdkafka's ssl.* properties, auth/tls's client context).
//
// GSSAPI, OAUTHBEARER without a token file (librdkafka's unsecured JWTs and OIDC token
// requests) and the ssl.* properties the proxy cannot honour (a PKCS#12
// keystore, a CRL, an engine) are refused by read_upstream_login / read_upstream_tls, so a
// start with a Kafka proxy listener stops saying so instead of failing each connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "auth/sasl/sasl_client.h"
#include "auth/tls/tls_client_context.h"
#include "protocol/core/bytes.h"

namespace sluice::gateway::proxy {

struct upstream_login {
    /// PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER; empty: no SASL login.
    std::string mechanism;
    std::string username;
    std::string password;
    /// OAUTHBEARER: the file the token is read from at each login (Kafka's
    /// sasl.oauthbearer.token.endpoint.url with a file: URL, or a proxy.principal.map
    /// OAUTHBEARER entry's), so that a token written anew by whoever renews it is used by the
    /// next upstream connection and re-authentication.
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

/// The file a `file:PATH` token URL names (file:///PATH too: leading slashes after `file:`
/// fold into one), as upstream.sasl.oauthbearer.token.endpoint.url and proxy.principal.map's
/// OAUTHBEARER entries take it. False with `why` (without the URL) for any other URL or one
/// naming no file.
bool token_file_of_url(std::string_view url, std::string& path, std::string& why);

/// The token in the file at `path`: its text, blanks and line ends around it removed. False
/// with `why` naming the file (never the token) when it cannot be read, is empty or is larger
/// than 64 KiB. Read at each login and re-authentication, so a renewed token is used.
bool read_token_file(const std::string& path, std::string& token, std::string& why);

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

/// One SASL login on an upstream connection as requests and their responses: SaslHandshake
/// v1, then SaslAuthenticate v1 until the mechanism is done. The first login of a connection
/// (log_in_upstream: nothing else on it yet) and a KIP-368 re-authentication (between
/// forwarded requests, proxy_connection) run the same steps. The secret is taken when the
/// exchange starts: OAUTHBEARER's token file is read then, so a renewed token is used.
/// Correlation ids are the exchange's own, counted from `first_correlation_id`.
class upstream_sasl_exchange {
public:
    upstream_sasl_exchange(const upstream_login& login, std::int32_t first_correlation_id = 1);
    upstream_sasl_exchange(const upstream_sasl_exchange&) = delete;
    upstream_sasl_exchange& operator=(const upstream_sasl_exchange&) = delete;

    enum class state {
        sending,  // `request` is the next frame to send; its response goes to on_response
        done,     // logged in: session_lifetime_ms() holds what the upstream said
        failed,   // why() says why (for the log; never a secret)
    };
    struct step {
        state what = state::failed;
        protocol::writer request;  // the frame, size prefix included (sending only)
    };

    /// The SaslHandshake request; failed when the token file cannot be read or the mechanism
    /// is not spoken.
    step start();
    /// The response frame (size prefix excluded) of the last request sent.
    step on_response(protocol::bytes_view response);
    /// The correlation id of the last request.
    std::int32_t correlation_id() const { return correlation_id_; }
    /// KIP-368: the session's lifetime the last SaslAuthenticate answered (v1); 0: no limit.
    std::int64_t session_lifetime_ms() const { return session_lifetime_ms_; }
    const std::string& why() const { return why_; }

private:
    step authenticate(std::string message);
    step fail(std::string why);

    const upstream_login& login_;
    std::unique_ptr<auth::sasl_client> client_;
    std::int32_t correlation_id_;
    std::int32_t last_correlation_id_;
    bool shaken_ = false;
    std::int64_t session_lifetime_ms_ = 0;
    std::string why_;
};

/// KIP-368: how long after a login whose session lasts `session_lifetime_ms` (> 0) the
/// connection re-authenticates: as Kafka's Java client, at 85 % of the lifetime plus up to
/// 10 % more by `jitter` (in [0, 1]: connections logged in together do not all re-authenticate
/// at once), and no later than the end minus `request_timeout` (the exchange's bound), but
/// never before half the lifetime.
std::chrono::milliseconds reauth_delay(std::int64_t session_lifetime_ms,
                                       std::chrono::milliseconds request_timeout, double jitter);

class upstream_stream;

/// Logs in on a freshly opened upstream connection (nothing else sent on it yet). False with
/// `why` set (for the log; never a secret) when the upstream refuses or the exchange fails.
/// `session_lifetime_ms` (when given): the session's lifetime the upstream answered (KIP-368;
/// 0: no limit). The caller bounds it (a deadline that closes the socket).
boost::asio::awaitable<bool> log_in_upstream(upstream_stream& s, const upstream_login& login,
                                             std::string& why,
                                             std::int64_t* session_lifetime_ms = nullptr);

}  // namespace sluice::gateway::proxy
