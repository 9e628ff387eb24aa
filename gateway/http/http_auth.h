// HTTP authentication (http.authentication=basic|bearer|basic,bearer): the router's guard, so
// that the REST Proxy, the WebSocket upgrade, SSE streams, /metrics and the console all pass
// one check. Basic is checked against the SASL users (their PLAIN verifier), Bearer against the
// OAUTHBEARER keys and claims. Browsers cannot put headers on a WebSocket or EventSource
// request, so /ws and the SSE routes also take the token as `access_token=` in the query.
// /healthz and /readyz stay open, and so do the console's files (/ui/..., GET / for a browser:
// they hold no data) and GET /v1/console/auth, which tells the console how to sign in.
//
// The console signs in with a user name and password once: POST /v1/console/session with
// Basic credentials answers a session token (auth/session_token.h), sent afterwards as
// `Authorization: Bearer` or `access_token=`, so the page keeps no password. Requests that
// carry `X-Sluice-Console` get a 401 without the Basic challenge, so the browser shows the
// console's own form rather than its password prompt. Owned by gateway/http; thread-safe
// (const after start).
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "auth/credential_store.h"
#include "auth/failure_limiter.h"
#include "auth/jwt/jwt.h"
#include "auth/password_cache.h"
#include "auth/session_token.h"
#include "gateway/http/http_settings.h"
#include "gateway/httpcore/router.h"
#include "gateway/core/metrics.h"
#include "gateway/policy/chain.h"

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
    /// For a request of the console (`X-Sluice-Console`), the only challenge is Bearer.
    http_response unauthorized(std::string_view message, bool console = false) const;

    http_auth_mode mode() const { return mode_; }

    /// A console session token for `principal`, valid for sessions().lifetime().
    std::string issue_session(std::string_view principal) const;
    /// Signing out: every session token this process issued to `principal` until now is
    /// refused from now on (its binding changes); later sign-ins get working ones.
    void end_sessions(std::string_view principal) const;
    const auth::session_tokens& sessions() const { return sessions_; }

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
    outcome check_session(std::string_view token) const;
    /// What a session of `principal` is bound to: a digest of its user's stored credentials,
    /// so that its user's new password or deletion ends it, and no other user's change does,
    /// and how many times that principal signed out (end_sessions).
    std::uint64_t session_binding(std::string_view principal) const;

    http_auth_mode mode_;
    const auth::credential_store& users_;
    const auth::jwt_verifier* tokens_;
    auth::failure_limiter& failures_;
    metrics_registry& metrics_;
    /// Basic sends the password with every request: a password checked once is not checked
    /// again (PBKDF2) until it expires there or the users change.
    mutable auth::password_cache checked_passwords_;
    auth::session_tokens sessions_;
    /// Sign-outs per principal (one entry per principal that signed out: bounded by the
    /// users and the tokens' subjects, never by the number of sessions).
    mutable std::mutex sign_outs_mutex_;
    mutable std::map<std::string, std::uint64_t, std::less<>> sign_outs_;
};

/// Who sent an HTTP request, as the policy chain sees it: the principal the guard established
/// (views into `ctx`, which must outlive the result), the peer, on `front` (rest, console,
/// websocket, sse: http_route_front).
inline requester http_requester(const http_request_context& ctx, policy_front front) {
    return requester{.front = front, .principal = ctx.principal, .peer = ctx.peer};
}

/// The console's sign-in routes: GET /v1/console/auth (open: {"schemes":["basic","bearer"]},
/// empty when authentication is off), GET /v1/console/session ({"principal":...}: who the
/// credentials sent are) and POST /v1/console/session (with Basic credentials: {"token",
/// "principal", "expires_in"}; a Bearer token is already a session and is refused with 400),
/// DELETE /v1/console/session (signing out: the caller's sessions end, 204).
void add_console_session_routes(router& routes, const http_authenticator& auth);

}  // namespace sluice::gateway
