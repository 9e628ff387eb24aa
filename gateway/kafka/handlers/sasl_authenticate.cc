// SaslAuthenticate (KIP-152): one SASL token each way, after SaslHandshake v1. A failed login
// gets SASL_AUTHENTICATION_FAILED with a message that does not tell whether the user exists,
// and the connection closes (as Kafka's SaslServerAuthenticator does). v1+ answers carry the
// session's lifetime (KIP-368: connections.max.reauth.ms, or a token's expiry if sooner).
#include <string>

#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/sasl_exchange.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

/// Nothing: served before and during the login, to anyone.
void sasl_authenticate_handler::declare(std::int16_t, const request&, access_list&) {}

boost::asio::awaitable<sasl_authenticate_handler::response> sasl_authenticate_handler::handle(
    request_context& ctx, request req) {
    response resp;
    auto& sec = ctx.security();
    if (!sec.requires_sasl() || (!sec.sasl && sec.authenticated())) {
        resp.error_code = kafka::error_code::illegal_sasl_state;
        resp.error_message = "SaslAuthenticate request received after successful authentication";
        co_return resp;
    }
    if (!sec.sasl || sec.raw_sasl_tokens) {
        resp.error_code = kafka::error_code::illegal_sasl_state;
        resp.error_message = "SaslAuthenticate request without a SaslHandshake v1 before it";
        ctx.close_connection_after();
        co_return resp;
    }
    std::string token(reinterpret_cast<const char*>(req.auth_bytes.data()), req.auth_bytes.size());
    auto step = co_await sasl_exchange_step(&ctx.svc(), &ctx.connection(), &sec, std::move(token));
    if (step.what == auth::sasl_step::outcome::failure) {
        resp.error_code = kafka::error_code::sasl_authentication_failed;
        resp.error_message = step.client_error;
        ctx.close_connection_after();
        co_return resp;
    }
    resp.error_code = kafka::error_code::none;
    resp.error_message = std::nullopt;
    const auto* reply = reinterpret_cast<const std::byte*>(step.reply.data());
    resp.auth_bytes.assign(reply, reply + step.reply.size());
    if (step.what == auth::sasl_step::outcome::success) {
        // KIP-368: v1+ clients learn when to re-authenticate; they may, before it ends.
        resp.session_lifetime_ms = sec.session_lifetime_ms;
        sec.can_reauthenticate = ctx.version() >= 1;
    }
    co_return resp;
}

}  // namespace sluice::gateway
