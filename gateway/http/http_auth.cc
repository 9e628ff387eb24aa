#include "gateway/http/http_auth.h"

#include <chrono>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/field.hpp>

#include "auth/sasl/plain.h"
#include "gateway/kafka/logger.h"
#include "gateway/server/auth_settings.h"
#include "protocol/core/base64.h"

namespace sluice::gateway {
namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

/// Routes anyone may call: probes for load balancers and orchestrators.
bool open_route(std::string_view pattern) { return pattern == "/healthz" || pattern == "/readyz"; }

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

http_response http_authenticator::unauthorized(std::string_view message) const {
    auto res = make_response({401, "application/json", json_error(40101, message)});
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
    // The PLAIN mechanism's check, so that Basic and SASL PLAIN accept the same passwords.
    auth::plain_server plain(users_);
    std::string message;
    message.push_back('\0');
    message += out.user;
    message.push_back('\0');
    message.append(*decoded, colon + 1);
    auto step = plain.step(message);
    if (step.what != auth::sasl_step::outcome::success) {
        out.reason = step.reason;
        return out;
    }
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

asio::awaitable<std::optional<http_response>> http_authenticator::check(
    http_request_context* ctx, std::string pattern) const {
    if (!mode_.any() || open_route(pattern)) {
        co_return std::nullopt;
    }
    std::optional<outcome> result;
    const auto header = ctx->req.find(http::field::authorization);
    if (header != ctx->req.end()) {
        const std::string_view value(header->value().data(), header->value().size());
        auto basic = mode_.basic ? credentials_for(value, "Basic") : std::nullopt;
        auto bearer = mode_.bearer ? credentials_for(value, "Bearer") : std::nullopt;
        if (basic) {
            result = check_basic(*basic);
        } else if (bearer) {
            result = check_bearer(*bearer);
        } else {
            outcome o;
            o.mechanism = "unknown";
            o.reason = "an Authorization scheme that is not enabled";
            result = std::move(o);
        }
    } else if (mode_.bearer && query_token_route(pattern)) {
        if (auto token = ctx->query.get("access_token")) {
            result = check_bearer(*token);
        }
    }
    const std::string address = ctx->peer.address().to_string();
    if (!result) {
        http_log().debug("http from {}: {} without credentials: 401", address, ctx->path);
        co_return unauthorized("Authentication required");
    }
    count_authentication(metrics_, "http", result->mechanism, result->ok);
    if (result->ok) {
        failures_.record_success(address);
        ctx->principal = std::move(result->principal);
        co_return std::nullopt;
    }
    auth_log().warn("http: authentication failed: user '{}' from {} with {}: {}",
                    loggable(result->user), address, result->mechanism, result->reason);
    const auto delay = failures_.record_failure(address, std::chrono::steady_clock::now());
    if (delay.count() > 0) {
        asio::steady_timer timer(ctx->executor, delay);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    co_return unauthorized("Authentication failed: invalid credentials");
}

}  // namespace sluice::gateway
