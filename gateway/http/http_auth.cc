#include "gateway/http/http_auth.h"

#include <chrono>
#include <cstring>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/field.hpp>

#include "auth/sasl/plain.h"
#include "gateway/http/json.h"
#include "gateway/http/ui_routes.h"
#include "gateway/core/logger.h"
#include "gateway/httpcore/logger.h"
#include "gateway/policy/auth_settings.h"
#include "gateway/policy/front_acls.h"
#include "protocol/core/base64.h"

namespace sluice::gateway {
namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

/// Routes anyone may call: probes for load balancers and orchestrators, the console's files
/// (no data in them) and what the console asks before it signs in.
bool open_route(std::string_view pattern, const http_request& req) {
    if (pattern == "/healthz" || pattern == "/readyz" || pattern == "/ui" ||
        pattern == "/ui/{path...}" || pattern == "/v1/console/auth") {
        return true;
    }
    // GET / is the console's page for a browser, the REST Proxy's answer for anything else.
    if (pattern == "/") {
        const auto accept = req[http::field::accept];
        return accept_prefers_html(std::string_view(accept.data(), accept.size()));
    }
    return false;
}

constexpr std::string_view console_header = "X-Sluice-Console";

/// Routes a browser opens without custom headers: the WebSocket upgrade and the SSE streams.
bool query_token_route(std::string_view pattern) {
    return pattern == "/ws" || pattern.ends_with("/events");
}

/// A client-sent user name as it may appear in a log line: printable ASCII, at most 64 bytes.
std::string loggable(std::string_view name) {
    std::string out;
    for (unsigned char c : name.substr(0, 64)) {
        out.push_back(c < 0x20 || c >= 0x7f ? '?' : static_cast<char>(c));
    }
    if (name.size() > 64) {
        out += "...";
    }
    return out;
}

/// "Basic xyz" -> "xyz" for `scheme` (case-insensitive, RFC 9110 section 11.1).
std::optional<std::string_view> credentials_for(std::string_view header, std::string_view scheme) {
    if (header.size() <= scheme.size() || header[scheme.size()] != ' ') {
        return std::nullopt;
    }
    for (std::size_t i = 0; i < scheme.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(header[i])) !=
            std::tolower(static_cast<unsigned char>(scheme[i]))) {
            return std::nullopt;
        }
    }
    auto rest = header.substr(scheme.size());
    while (rest.starts_with(' ')) {
        rest.remove_prefix(1);
    }
    return rest;
}

}  // namespace

http_response http_authenticator::unauthorized(std::string_view message, bool console) const {
    auto res = make_response({401, "application/json", json_error(40101, message)});
    if (console) {
        // The console signs in with its own form and a session token (a Bearer token): a
        // Basic challenge would make the browser show its password prompt over the page.
        res.insert(http::field::www_authenticate, "Bearer realm=\"sluice\"");
        return res;
    }
    if (mode_.basic) {
        res.insert(http::field::www_authenticate, "Basic realm=\"sluice\"");
    }
    if (mode_.bearer) {
        res.insert(http::field::www_authenticate, "Bearer realm=\"sluice\"");
    }
    return res;
}

http_authenticator::outcome http_authenticator::check_basic(std::string_view credentials) const {
    outcome out;
    out.mechanism = "basic";
    auto decoded = protocol::base64_decode(credentials, protocol::base64_alphabet::standard,
                                           protocol::base64_padding::optional);
    const auto colon = decoded ? decoded->find(':') : std::string::npos;
    if (colon == std::string::npos) {
        out.reason = "malformed Basic credentials";
        return out;
    }
    out.user = decoded->substr(0, colon);
    if (out.user.find('\0') != std::string::npos || decoded->find('\0', colon) != std::string::npos) {
        out.reason = "malformed Basic credentials";
        return out;
    }
    const std::string_view password = std::string_view(*decoded).substr(colon + 1);
    // Read before the check, so that a change of users while it runs makes its entry stale.
    const auto generation = users_.generation();
    const auto now = auth::password_cache::clock::now();
    if (checked_passwords_.contains(out.user, password, generation, now)) {
        out.ok = true;
        out.principal = "User:" + out.user;
        return out;
    }
    // The PLAIN mechanism's check, so that Basic and SASL PLAIN accept the same passwords.
    auth::plain_server plain(users_);
    std::string message;
    message.push_back('\0');
    message += out.user;
    message.push_back('\0');
    message.append(password);
    auto step = plain.step(message);
    if (step.what != auth::sasl_step::outcome::success) {
        out.reason = step.reason;
        return out;
    }
    checked_passwords_.insert(out.user, password, generation, now);
    out.ok = true;
    out.principal = "User:" + step.user;
    return out;
}

http_authenticator::outcome http_authenticator::check_bearer(std::string_view token) const {
    outcome out;
    out.mechanism = "bearer";
    if (tokens_ == nullptr) {
        out.reason = "no token keys are configured";
        return out;
    }
    auto claims = tokens_->verify(token);
    if (!claims) {
        out.reason = claims.error();
        return out;
    }
    out.ok = true;
    out.user = claims->subject;
    out.principal = "User:" + claims->subject;
    return out;
}

std::uint64_t http_authenticator::session_binding(std::string_view principal) const {
    const std::string_view user = principal.starts_with("User:") ? principal.substr(5) : principal;
    const auto creds = users_.find(user);
    const std::string stored = creds ? auth::format_user_credentials(*creds) : std::string();
    const std::string digest = auth::hash(auth::hash_algorithm::sha256, stored);
    std::uint64_t binding = 0;
    std::memcpy(&binding, digest.data(), sizeof binding);
    std::lock_guard lock(sign_outs_mutex_);
    if (const auto it = sign_outs_.find(principal); it != sign_outs_.end()) {
        binding ^= it->second * 0x9e3779b97f4a7c15ULL;  // each sign-out a different binding
    }
    return binding;
}

void http_authenticator::end_sessions(std::string_view principal) const {
    std::lock_guard lock(sign_outs_mutex_);
    auto it = sign_outs_.find(principal);
    if (it == sign_outs_.end()) {
        it = sign_outs_.emplace(std::string(principal), 0).first;
    }
    it->second += 1;
}

http_authenticator::outcome http_authenticator::check_session(std::string_view token) const {
    outcome out;
    out.mechanism = "session";
    const auto claimed = auth::session_tokens::claimed_principal(token);
    const std::uint64_t binding = claimed ? session_binding(*claimed) : 0;
    auto principal = sessions_.verify(token, binding, auth::session_tokens::clock::now(),
                                      &out.reason);
    if (!principal) {
        return out;
    }
    out.ok = true;
    out.user = principal->starts_with("User:") ? principal->substr(5) : *principal;
    out.principal = std::move(*principal);
    return out;
}

std::string http_authenticator::issue_session(std::string_view principal) const {
    return sessions_.issue(principal, session_binding(principal),
                           auth::session_tokens::clock::now());
}

asio::awaitable<std::optional<http_response>> http_authenticator::check(
    http_request_context* ctx, std::string pattern) const {
    if (!mode_.any() || open_route(pattern, ctx->req)) {
        co_return std::nullopt;
    }
    // Session tokens are issued to Basic sign-ins; JWTs are checked only with bearer on.
    const auto bearer_token = [this](std::string_view token) {
        return auth::session_tokens::looks_like(token) ? check_session(token)
                                                        : check_bearer(token);
    };
    const bool console =
        ctx->req.find(boost::beast::string_view(console_header.data(), console_header.size())) !=
        ctx->req.end();
    std::optional<outcome> result;
    const auto header = ctx->req.find(http::field::authorization);
    if (header != ctx->req.end()) {
        const std::string_view value(header->value().data(), header->value().size());
        auto basic = mode_.basic ? credentials_for(value, "Basic") : std::nullopt;
        auto bearer = credentials_for(value, "Bearer");
        if (bearer && !mode_.bearer && !auth::session_tokens::looks_like(*bearer)) {
            bearer.reset();
        }
        if (basic) {
            result = check_basic(*basic);
        } else if (bearer) {
            result = bearer_token(*bearer);
        } else {
            outcome o;
            o.mechanism = "unknown";
            o.reason = "an Authorization scheme that is not enabled";
            result = std::move(o);
        }
    } else if (query_token_route(pattern)) {
        auto token = ctx->query.get("access_token");
        if (token && (mode_.bearer || auth::session_tokens::looks_like(*token))) {
            result = bearer_token(*token);
        }
    }
    const std::string address = ctx->peer.address().to_string();
    if (!result) {
        http_log().debug("http from {}: {} without credentials: 401", address, ctx->path);
        co_return unauthorized("Authentication required", console);
    }
    count_authentication(metrics_, "http", result->mechanism, result->ok);
    if (result->ok) {
        failures_.record_success(address);
        ctx->principal = std::move(result->principal);
        co_return std::nullopt;
    }
    auth_log().warn("http: authentication failed: user '{}' from {} with {}: {}",
                    loggable(result->user), address, result->mechanism, result->reason);
    const std::string scheme = result->mechanism == "basic"    ? "Basic"
                               : result->mechanism == "bearer" ? "Bearer"
                                                               : result->mechanism;
    // The audit line, as every front's: through the chain (which needs no authorizer for it).
    policy_chain{}.authentication_failed(
        requester{.front = http_route_front(pattern), .principal = "User:ANONYMOUS",
                  .peer = ctx->peer},
        scheme, result->user, result->reason);
    const auto delay = failures_.record_failure(address, std::chrono::steady_clock::now());
    if (delay.count() > 0) {
        asio::steady_timer timer(ctx->executor, delay);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    co_return unauthorized("Authentication failed: invalid credentials", console);
}

namespace {

asio::awaitable<handler_result> console_auth(const http_authenticator* auth,
                                             http_request_context) {
    json::writer w;
    w.start_object();
    w.key("schemes");
    w.start_array();
    if (auth->mode().basic) {
        w.string("basic");
    }
    if (auth->mode().bearer) {
        w.string("bearer");
    }
    w.end_array();
    w.end_object();
    co_return make_response({200, "application/json", w.str()});
}

asio::awaitable<handler_result> console_whoami(http_request_context ctx) {
    json::writer w;
    w.start_object();
    w.field("principal", ctx.principal);
    w.end_object();
    co_return make_response({200, "application/json", w.str()});
}

asio::awaitable<handler_result> console_sign_in(const http_authenticator* auth,
                                                http_request_context ctx) {
    json::writer w;
    w.start_object();
    if (!auth->mode().any()) {
        // Nothing to sign in to: every caller is anonymous.
        w.null_field("token");
        w.field("principal", ctx.principal);
        w.end_object();
        co_return make_response({200, "application/json", w.str()});
    }
    // The guard let the request through, so its credentials were valid; only a password
    // sign-in gets a session (a Bearer token already is one, with its own expiry).
    const auto header = ctx.req[http::field::authorization];
    if (!credentials_for(std::string_view(header.data(), header.size()), "Basic")) {
        co_return error_response(
            400, "a session is issued for Basic credentials only; send a Bearer token as it is");
    }
    w.field("token", auth->issue_session(ctx.principal));
    w.field("principal", ctx.principal);
    w.field("expires_in", static_cast<std::int64_t>(auth->sessions().lifetime().count()));
    w.end_object();
    auth_log().info("http: console session for {} from {}", ctx.principal,
                    ctx.peer.address().to_string());
    auto res = make_response({200, "application/json", w.str()});
    res.set(http::field::cache_control, "no-store");
    co_return res;
}

/// Signing out: every console session of the caller's principal ends (this process issued
/// them; a JWT is not a session and stays valid until it expires).
asio::awaitable<handler_result> console_sign_out(const http_authenticator* auth,
                                                 http_request_context ctx) {
    if (auth->mode().any()) {
        auth->end_sessions(ctx.principal);
        auth_log().info("http: console sessions of {} ended (signed out) from {}",
                        ctx.principal, ctx.peer.address().to_string());
    }
    co_return make_response({204, "application/json", ""});
}

}  // namespace

void add_console_session_routes(router& routes, const http_authenticator& auth) {
    routes.add(http::verb::get, "/v1/console/auth", [a = &auth](http_request_context ctx) {
        return console_auth(a, std::move(ctx));
    });
    routes.add(http::verb::get, "/v1/console/session", console_whoami);
    routes.add(http::verb::post, "/v1/console/session", [a = &auth](http_request_context ctx) {
        return console_sign_in(a, std::move(ctx));
    });
    routes.add(http::verb::delete_, "/v1/console/session", [a = &auth](http_request_context ctx) {
        return console_sign_out(a, std::move(ctx));
    });
}

}  // namespace sluice::gateway
