#include "gateway/proxy/client_login.h"

#include <algorithm>
#include <chrono>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "auth/credential_store.h"
#include "gateway/core/logger.h"
#include "gateway/policy/auth_settings.h"
#include "gateway/proxy/principal_map.h"
#include "protocol/kafka/api_table.h"
#include "protocol/kafka/messages/sasl_authenticate.h"
#include "protocol/kafka/messages/sasl_handshake.h"

namespace sluice::gateway::proxy {
namespace asio = boost::asio;
namespace kafka = protocol::kafka;

namespace {

/// A client-sent user name as it may appear in a log line: printable ASCII, at most 64 bytes.
std::string login_loggable(std::string_view name) {
    std::string out;
    for (unsigned char c : name.substr(0, 64)) {
        out.push_back(c < 0x20 || c >= 0x7f ? '?' : static_cast<char>(c));
    }
    if (name.size() > 64) {
        out += "...";
    }
    return out;
}

template <typename Response>
login_answer login_frame(const kafka::request_header& h, const Response& resp,
                         bool close_after) {
    login_answer out;
    out.close_after = close_after;
    const std::size_t size_at = out.frame.reserve_i32();
    const kafka::api_info* info = kafka::find_api(h.api_key);
    kafka::encode_response_header(out.frame, h.correlation_id,
                                  info->response_header_version(h.api_version));
    resp.encode(out.frame, h.api_version);
    out.frame.patch_i32(size_at, static_cast<std::int32_t>(out.frame.size() - 4));
    return out;
}

}  // namespace

client_login::client_login(const client_login_services& svc, std::uint64_t conn_id,
                           asio::ip::tcp::endpoint peer)
    : svc_(svc), conn_id_(conn_id), peer_(std::move(peer)) {}

login_answer client_login::handshake(const kafka::request_header& h, protocol::bytes_view body) {
    protocol::reader r(body);
    kafka::sasl_handshake_request req;
    req.decode(r, h.api_version);
    kafka::sasl_handshake_response resp;
    resp.mechanisms = svc_.mechanisms;
    const std::string address = peer_.address().to_string();
    if (!r.ok()) {
        auth_log().warn("conn {} from {}: undecodable SaslHandshake; closing", conn_id_, address);
        resp.error_code = kafka::error_code::illegal_sasl_state;
        return login_frame(h, resp, true);
    }
    if (exchange_) {
        // compat: Kafka's SaslServerAuthenticator fails a second handshake within one login.
        resp.error_code = kafka::error_code::illegal_sasl_state;
        return login_frame(h, resp, true);
    }
    if (!principal_.empty()) {
        // KIP-368: a client that logged in with SaslAuthenticate v1+ may log in again, with
        // the same mechanism (and, checked at the end, as the same principal).
        if (!can_reauthenticate_ || h.api_version == 0) {
            resp.error_code = kafka::error_code::illegal_sasl_state;
            return login_frame(h, resp, false);
        }
        if (req.mechanism != mechanism_) {
            auth_log().warn("conn {} from {}: re-authentication with {} after {}; closing",
                            conn_id_, address, login_loggable(req.mechanism), mechanism_);
            resp.error_code = kafka::error_code::unsupported_sasl_mechanism;
            return login_frame(h, resp, true);
        }
    }
    const auto& enabled = svc_.mechanisms;
    const bool offered = std::find(enabled.begin(), enabled.end(), req.mechanism) != enabled.end();
    auto exchange = offered && svc_.users != nullptr
                        ? auth::make_sasl_server(req.mechanism, *svc_.users, svc_.tokens)
                        : nullptr;
    if (!exchange) {
        auth_log().warn("conn {} from {}: SASL mechanism '{}' is not enabled; closing", conn_id_,
                        address, login_loggable(req.mechanism));
        resp.error_code = kafka::error_code::unsupported_sasl_mechanism;
        return login_frame(h, resp, true);
    }
    exchange_ = std::move(exchange);
    raw_tokens_ = h.api_version == 0;
    resp.error_code = kafka::error_code::none;
    return login_frame(h, resp, false);
}

asio::awaitable<login_answer> client_login::authenticate(const kafka::request_header& h,
                                                         protocol::bytes_view body) {
    kafka::sasl_authenticate_response resp;
    if (!exchange_ && authenticated()) {
        resp.error_code = kafka::error_code::illegal_sasl_state;
        resp.error_message = "SaslAuthenticate request received after successful authentication";
        co_return login_frame(h, resp, false);
    }
    if (!exchange_ || raw_tokens_) {
        resp.error_code = kafka::error_code::illegal_sasl_state;
        resp.error_message = "SaslAuthenticate request without a SaslHandshake v1 before it";
        co_return login_frame(h, resp, true);
    }
    protocol::reader r(body);
    kafka::sasl_authenticate_request req;
    req.decode(r, h.api_version);
    if (!r.ok()) {
        resp.error_code = kafka::error_code::illegal_sasl_state;
        resp.error_message = "undecodable SaslAuthenticate request";
        co_return login_frame(h, resp, true);
    }
    std::string token(reinterpret_cast<const char*>(req.auth_bytes.data()), req.auth_bytes.size());
    const auto result = co_await step(std::move(token));
    if (result.what == auth::sasl_step::outcome::failure) {
        resp.error_code = kafka::error_code::sasl_authentication_failed;
        resp.error_message = result.client_error;
        co_return login_frame(h, resp, true);
    }
    resp.error_code = kafka::error_code::none;
    resp.error_message = std::nullopt;
    const auto* reply = reinterpret_cast<const std::byte*>(result.reply.data());
    resp.auth_bytes.assign(reply, reply + result.reply.size());
    if (result.what == auth::sasl_step::outcome::success) {
        resp.session_lifetime_ms = session_lifetime_ms_;
        can_reauthenticate_ = h.api_version >= 1;
    }
    co_return login_frame(h, resp, false);
}

asio::awaitable<std::optional<login_answer>> client_login::raw_token(protocol::bytes_view token) {
    const auto result = co_await step(std::string(protocol::as_chars(token)));
    if (result.what == auth::sasl_step::outcome::failure) {
        co_return std::nullopt;
    }
    login_answer out;
    out.frame.i32(static_cast<std::int32_t>(result.reply.size()));
    out.frame.raw(protocol::as_bytes(result.reply));
    co_return out;
}

asio::awaitable<auth::sasl_step> client_login::step(std::string token) {
    const std::string mechanism(exchange_->mechanism());
    auth::sasl_step result = exchange_->step(token);
    const std::string address = peer_.address().to_string();
    const requester who{.front = policy_front::kafka,
                        .principal = principal_.empty() ? std::string_view("User:ANONYMOUS")
                                                        : std::string_view(principal_),
                        .peer = peer_};
    auto fail = [&] {
        auth_log().warn("conn {}: authentication failed: user '{}' from {} with {}: {}", conn_id_,
                        login_loggable(result.user), address, mechanism, result.reason);
        svc_.chain.authentication_failed(who, mechanism, result.user, result.reason);
        if (svc_.metrics != nullptr) {
            count_authentication(*svc_.metrics, "kafka", mechanism, false);
        }
    };
    switch (result.what) {
        case auth::sasl_step::outcome::challenge:
            break;
        case auth::sasl_step::outcome::success: {
            exchange_.reset();
            raw_tokens_ = false;
            const std::string principal = "User:" + result.user;
            if (!principal_.empty() && principal_ != principal) {
                // compat: Kafka refuses a re-authentication that changes the principal.
                result.what = auth::sasl_step::outcome::failure;
                result.client_error =
                    "Authentication failed: re-authentication may not change the principal";
                result.reason = "re-authentication as another principal (was " + principal_ + ")";
                fail();
                break;
            }
            if (svc_.principals != nullptr && !svc_.principals->current()->admits(principal)) {
                // No upstream credentials for it and proxy.principal.map.unmapped=deny: the
                // login fails here rather than every request later.
                result.what = auth::sasl_step::outcome::failure;
                result.client_error =
                    "Authentication failed: this principal may not use the proxy";
                result.reason = principal +
                                " has no entry in proxy.principal.map "
                                "(proxy.principal.map.unmapped=deny)";
                fail();
                break;
            }
            const bool reauth = !principal_.empty();
            principal_ = principal;
            mechanism_ = mechanism;
            // KIP-368, as the broker mode: the session lasts connections.max.reauth.ms, or
            // less when the credential expires sooner; with no maximum it does not end.
            std::int64_t lifetime_ms = svc_.max_reauth_ms;
            if (lifetime_ms > 0 && result.expires_at_s > 0) {
                const std::int64_t now_ms =
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
                lifetime_ms = std::max<std::int64_t>(
                    1, std::min(lifetime_ms, result.expires_at_s * 1000 - now_ms));
            }
            session_lifetime_ms_ = lifetime_ms;
            session_expiry_ = lifetime_ms > 0 ? std::chrono::steady_clock::now() +
                                                    std::chrono::milliseconds(lifetime_ms)
                                              : std::chrono::steady_clock::time_point{};
            if (svc_.failures != nullptr) {
                svc_.failures->record_success(address);
            }
            if (svc_.metrics != nullptr) {
                count_authentication(*svc_.metrics, "kafka", mechanism, true);
            }
            auth_log().debug("conn {} from {}: {} as {} with {} (proxy)", conn_id_, address,
                             reauth ? "re-authenticated" : "authenticated", principal_, mechanism);
            break;
        }
        case auth::sasl_step::outcome::failure: {
            exchange_.reset();
            raw_tokens_ = false;
            fail();
            if (svc_.failures != nullptr) {
                const auto delay =
                    svc_.failures->record_failure(address, std::chrono::steady_clock::now());
                if (delay.count() > 0) {
                    auto executor = co_await asio::this_coro::executor;
                    asio::steady_timer timer(executor, delay);
                    boost::system::error_code ec;
                    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
                }
            }
            break;
        }
    }
    co_return result;
}

}  // namespace sluice::gateway::proxy
