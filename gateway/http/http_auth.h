// HTTP authentication (http.authentication=basic|bearer|basic,bearer): the router's guard, so
// that the REST Proxy, the WebSocket upgrade, SSE streams, /metrics and the console all pass
// one check. Basic is checked against the SASL users (their PLAIN verifier), Bearer against the
// OAUTHBEARER keys and claims. Browsers cannot put headers on a WebSocket or EventSource
// request, so /ws and the SSE routes also take the token as `access_token=` in the query.
// /healthz and /readyz stay open. Owned by gateway/http; thread-safe (const after start).
#pragma once

#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "auth/credential_store.h"
#include "auth/failure_limiter.h"
#include "auth/jwt/jwt.h"
#include "gateway/http/http_settings.h"
#include "gateway/http/router.h"
#include "gateway/server/metrics.h"

namespace sluice::gateway {

class http_authenticator {
public:
    /// `tokens` may be null (Bearer then fails: no keys). All must outlive the authenticator.
    http_authenticator(http_auth_mode mode, const auth::credential_store& users,
                       const auth::jwt_verifier* tokens, auth::failure_limiter& failures,
                       metrics_registry& metrics)
        : mode_(mode), users_(users), tokens_(tokens), failures_(failures), metrics_(metrics) {}

    /// The guard: nullopt (ctx->principal set) or the 401 answer. Repeated failures from one
    /// address are answered later and later (auth::failure_limiter, shared with Kafka).
    boost::asio::awaitable<std::optional<http_response>> check(http_request_context* ctx,
                                                               std::string pattern) const;

    /// The answer to a request without acceptable credentials: 401, one WWW-Authenticate
    /// header per enabled scheme, the REST Proxy's body {"error_code":40101,...}.
    http_response unauthorized(std::string_view message) const;

private:
    struct outcome {
        bool ok = false;
        std::string principal;
        std::string user;       // as sent, for the log
        std::string mechanism;  // basic or bearer
        std::string reason;     // for the log, never a secret
    };
    outcome check_basic(std::string_view credentials) const;
    outcome check_bearer(std::string_view token) const;

    http_auth_mode mode_;
    const auth::credential_store& users_;
    const auth::jwt_verifier* tokens_;
    auth::failure_limiter& failures_;
    metrics_registry& metrics_;
};

}  // namespace sluice::gateway
