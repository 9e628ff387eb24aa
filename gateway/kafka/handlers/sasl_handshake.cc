// SaslHandshake (KIP-43): the client names its SASL mechanism; the answer lists the enabled
// ones. v1 carries the exchange in SaslAuthenticate requests; after v0 the tokens follow as
// bare frames (the dispatcher routes them). Only on a SASL listener, before authentication or,
// for a client that logged in with SaslAuthenticate v1+, to re-authenticate (KIP-368) with the
// same mechanism; elsewhere, as Kafka's KafkaApis does, ILLEGAL_SASL_STATE.
#include <algorithm>

#include "auth/sasl/sasl_server.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/core/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

boost::asio::awaitable<sasl_handshake_handler::response> sasl_handshake_handler::handle(
    request_context& ctx, request req) {
    const auto& enabled = ctx.svc().kafka.sasl_mechanisms;
    response resp;
    resp.mechanisms = enabled;
    auto& sec = ctx.security();
    if (!sec.requires_sasl()) {
        resp.error_code = kafka::error_code::illegal_sasl_state;
        co_return resp;
    }
    if (sec.sasl) {
        // compat: Kafka's SaslServerAuthenticator fails a second handshake within one login.
        resp.error_code = kafka::error_code::illegal_sasl_state;
        ctx.close_connection_after();
        co_return resp;
    }
    const bool reauthenticating = !sec.principal.empty();
    if (reauthenticating) {
        // KIP-368: a client that logged in with SaslAuthenticate v1+ may log in again on the
        // same connection, with the same mechanism and as the same principal.
        if (!sec.can_reauthenticate || ctx.version() == 0) {
            resp.error_code = kafka::error_code::illegal_sasl_state;
            if (sec.session_expired()) {
                ctx.close_connection_after();
            }
            co_return resp;
        }
        if (req.mechanism != sec.mechanism) {
            auth_log().warn("conn {} from {}: re-authentication with {} after {}; closing",
                            ctx.connection().id, ctx.connection().peer.address().to_string(),
                            req.mechanism.substr(0, 64), sec.mechanism);
            resp.error_code = kafka::error_code::unsupported_sasl_mechanism;
            ctx.close_connection_after();
            co_return resp;
        }
    }
    const bool offered = std::find(enabled.begin(), enabled.end(), req.mechanism) != enabled.end();
    auto exchange = offered ? auth::make_sasl_server(req.mechanism, ctx.svc().users,
                                                       ctx.svc().tokens) : nullptr;
    if (!exchange) {
        auth_log().warn("conn {} from {}: SASL mechanism '{}' is not enabled; closing",
                        ctx.connection().id, ctx.connection().peer.address().to_string(),
                        req.mechanism.substr(0, 64));
        resp.error_code = kafka::error_code::unsupported_sasl_mechanism;
        ctx.close_connection_after();
        co_return resp;
    }
    sec.sasl = std::move(exchange);
    sec.raw_sasl_tokens = ctx.version() == 0;
    resp.error_code = kafka::error_code::none;
    co_return resp;
}

}  // namespace sluice::gateway
