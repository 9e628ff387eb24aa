#include "auth/sasl/oauthbearer.h"

namespace sluice::auth {
namespace {

sasl_step oauth_failure(std::string client_error, std::string reason, std::string user = {}) {
    sasl_step s;
    s.what = sasl_step::outcome::failure;
    s.user = std::move(user);
    s.client_error = std::move(client_error);
    s.reason = std::move(reason);
    return s;
}

constexpr std::string_view malformed = "Authentication failed: malformed SASL OAUTHBEARER message";

}  // namespace

sasl_step oauthbearer_server::step(std::string_view message) {
    if (done_) {
        return oauth_failure("Authentication failed: unexpected SASL OAUTHBEARER message",
                             "OAUTHBEARER message after the exchange ended");
    }
    done_ = true;
    // gs2-header: "n," or "y," (no channel binding either way), then "a=AUTHZID," or ",".
    if (message.size() < 3 || (message[0] != 'n' && message[0] != 'y') || message[1] != ',') {
        return oauth_failure(std::string(malformed), "OAUTHBEARER message without a gs2 header");
    }
    const auto header_end = message.find(',', 2);
    if (header_end == std::string_view::npos) {
        return oauth_failure(std::string(malformed), "OAUTHBEARER gs2 header not terminated");
    }
    const auto authzid_part = message.substr(2, header_end - 2);
    if (!authzid_part.empty() && !authzid_part.starts_with("a=")) {
        return oauth_failure(std::string(malformed), "OAUTHBEARER gs2 header malformed");
    }
    std::string_view rest = message.substr(header_end + 1);
    if (!rest.starts_with('\x01') || !rest.ends_with("\x01\x01")) {
        return oauth_failure(std::string(malformed),
                             "OAUTHBEARER key/value pairs not framed by 0x01");
    }
    rest = rest.substr(1, rest.size() - 2);  // pairs, each ending in 0x01
    std::optional<std::string_view> auth_value;
    while (!rest.empty()) {
        const auto end = rest.find('\x01');
        if (end == std::string_view::npos) {
            return oauth_failure(std::string(malformed), "OAUTHBEARER pair not terminated");
        }
        const auto pair = rest.substr(0, end);
        rest = rest.substr(end + 1);
        const auto eq = pair.find('=');
        if (eq == std::string_view::npos || eq == 0) {
            return oauth_failure(std::string(malformed), "OAUTHBEARER pair without a key");
        }
        if (pair.substr(0, eq) == "auth") {
            if (auth_value) {
                return oauth_failure(std::string(malformed), "OAUTHBEARER auth given twice");
            }
            auth_value = pair.substr(eq + 1);
        }
        // Other keys (host, port, Kafka's SASL extensions) are ignored.
    }
    if (!auth_value) {
        return oauth_failure(std::string(malformed), "OAUTHBEARER message without auth=");
    }
    // RFC 6750's credentials: "Bearer" (any case) then one or more spaces, then the token.
    std::string_view v = *auth_value;
    if (v.size() < 7 || (v.substr(0, 6) != "Bearer" && v.substr(0, 6) != "bearer") ||
        v[6] != ' ') {
        return oauth_failure(std::string(malformed), "OAUTHBEARER auth is not a Bearer token");
    }
    v.remove_prefix(6);
    while (v.starts_with(' ')) {
        v.remove_prefix(1);
    }
    if (verifier_ == nullptr) {
        return oauth_failure("Authentication failed: invalid token",
                             "no OAUTHBEARER keys are configured");
    }
    auto claims = verifier_->verify(v);
    if (!claims) {
        return oauth_failure("Authentication failed: invalid token: " + claims.error(),
                             claims.error());
    }
    const std::string authzid =
        authzid_part.empty() ? std::string() : std::string(authzid_part.substr(2));
    if (!authzid.empty() && authzid != claims->subject) {
        return oauth_failure("Authentication failed: authorization id differs from the token's "
                             "subject",
                             "authorization id differs from the token subject", claims->subject);
    }
    sasl_step ok;
    ok.what = sasl_step::outcome::success;
    ok.user = claims->subject;
    ok.expires_at_s = claims->expires_at;
    return ok;
}

}  // namespace sluice::auth
