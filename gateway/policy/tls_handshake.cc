#include "gateway/policy/tls_handshake.h"

#include "gateway/core/logger.h"

namespace sluice::gateway {

std::optional<std::string> tls_client_principal(const auth::tls_server_context& ctx, SSL* ssl,
                                                const std::string& who,
                                                const audit_source& source) {
    const auto subject = auth::peer_subject(ssl);
    if (!subject) {
        return "User:ANONYMOUS";
    }
    const auto name = ctx.principals.map(*subject);
    if (!name) {
        auth_log().warn("{}: no ssl.principal.mapping.rules rule matches the client "
                        "certificate subject '{}'; closing",
                        who, *subject);
        audit_authentication_failed(source, "mTLS", *subject,
                                    "no ssl.principal.mapping.rules rule matches the certificate "
                                    "subject");
        return std::nullopt;
    }
    std::string principal = "User:" + *name;
    auth_log().info("{}: authenticated as {} by TLS client certificate '{}'", who, principal,
                    *subject);
    return principal;
}

}  // namespace sluice::gateway
