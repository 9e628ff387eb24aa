// The token settings shared by the Kafka front (SASL OAUTHBEARER) and the HTTP front (Bearer):
// where the public keys are and what a token must say. Read once by run_server.
#pragma once

#include <cstddef>
#include <memory>

#include "auth/authorizer.h"
#include "auth/jwt/jwt.h"
#include "gateway/core/config.h"
#include "gateway/core/metrics.h"

namespace sluice::gateway {

/// The verifier for sasl.oauthbearer.jwks.location / sasl.oauthbearer.public.key.locations
/// with sasl.oauthbearer.expected.audience, .expected.issuer, .sub.claim.name,
/// .clock.skew.seconds and .max.token.bytes; null when no key location is set. Throws
/// config_error for a setting that does not parse or a key file that cannot be used.
std::unique_ptr<auth::jwt_verifier> read_jwt_verifier(const config& cfg);

/// Reads the key files again (SIGHUP: an identity provider rotated its keys) and gives them to
/// `verifier`; returns how many keys it now has. Throws config_error, leaving `verifier` as it
/// was, when a file cannot be read or holds no usable key.
std::size_t reload_jwt_keys(const config& cfg, auth::jwt_verifier& verifier);

/// authorizer.enabled (default false), super.users (Kafka's semicolon list of principals,
/// "User:admin;User:ops") and allow.everyone.if.no.acl.found (default false). Throws
/// config_error for a super user that is not "Type:name".
auth::authorizer_settings read_authorizer_settings(const config& cfg);

/// Counts one authentication attempt: sluice_authentications_total{front,mechanism} always,
/// sluice_authentication_failures_total{front,mechanism} too when it failed. Thread-safe.
void count_authentication(metrics_registry& metrics, std::string_view front,
                          std::string_view mechanism, bool ok);

/// Creates both series at 0 for front="kafka" and each of `mechanisms`, so that the families
/// are on /metrics before the first login.
void register_authentication_metrics(metrics_registry& metrics,
                                     const std::vector<std::string>& mechanisms);

/// Splits a list at `separator`, trimming blanks and dropping empty items.
std::vector<std::string> split_list(const std::string& text, char separator);

/// Splits a comma list, trimming blanks and dropping empty items.
inline std::vector<std::string> split_comma_list(const std::string& text) {
    return split_list(text, ',');
}

}  // namespace sluice::gateway
