#include "auth/sasl/plain.h"

namespace sluice::auth {
namespace {

constexpr std::string_view plain_invalid_credentials =
    "Authentication failed: Invalid username or password";

sasl_step plain_failure(std::string user, std::string client_error, std::string reason) {
    sasl_step s;
    s.what = sasl_step::outcome::failure;
    s.user = std::move(user);
    s.client_error = std::move(client_error);
    s.reason = std::move(reason);
    return s;
}

}  // namespace

sasl_step plain_server::step(std::string_view message) {
    if (done_) {
        return plain_failure({}, "Authentication failed: unexpected SASL PLAIN message",
                             "PLAIN message after the exchange ended");
    }
    done_ = true;
    // RFC 4616: message = [authzid] UTF8NUL authcid UTF8NUL passwd, each part 1..255 bytes
    // (authzid may be empty) and free of NUL.
    const auto first = message.find('\0');
    const auto second = first == std::string_view::npos ? first : message.find('\0', first + 1);
    if (second == std::string_view::npos ||
        message.find('\0', second + 1) != std::string_view::npos) {
        return plain_failure({}, "Authentication failed: malformed SASL PLAIN message",
                             "malformed PLAIN message (expected authzid NUL authcid NUL passwd)");
    }
    const auto authzid = message.substr(0, first);
    const auto authcid = message.substr(first + 1, second - first - 1);
    const auto password = message.substr(second + 1);
    if (authcid.empty() || password.empty()) {
        return plain_failure(std::string(authcid),
                             "Authentication failed: malformed SASL PLAIN message",
                             "empty user name or password in PLAIN message");
    }
    // compat: Kafka's PlainSaslServer refuses an authorization id other than the user name.
    if (!authzid.empty() && authzid != authcid) {
        return plain_failure(std::string(authcid),
                             "Authentication failed: Client requested an authorization id that "
                             "is different from username",
                             "authorization id differs from the user name");
    }
    auto creds = users_.find(authcid);
    if (creds && !creds->plain && (creds->scram_sha_512 || creds->scram_sha_256)) {
        // Changed through AlterUserScramCredentials: no PLAIN verifier, check the SCRAM one.
        const bool ok = creds->scram_sha_512
                            ? verify_scram_password(hash_algorithm::sha512, *creds->scram_sha_512,
                                                    password)
                            : verify_scram_password(hash_algorithm::sha256, *creds->scram_sha_256,
                                                    password);
        if (!ok) {
            return plain_failure(std::string(authcid), std::string(plain_invalid_credentials),
                                 "wrong password");
        }
        sasl_step ok_step;
        ok_step.what = sasl_step::outcome::success;
        ok_step.user = std::string(authcid);
        return ok_step;
    }
    if (!creds || !creds->plain) {
        // The same PBKDF2 work as for a real user, so that timing does not tell them apart.
        (void)pbkdf2(hash_algorithm::sha512, password, users_.decoy_key(), min_scram_iterations);
        return plain_failure(std::string(authcid), std::string(plain_invalid_credentials),
                             "unknown user");
    }
    if (!verify_plain(*creds->plain, password)) {
        return plain_failure(std::string(authcid), std::string(plain_invalid_credentials),
                             "wrong password");
    }
    sasl_step ok;
    ok.what = sasl_step::outcome::success;
    ok.user = std::string(authcid);
    return ok;
}

}  // namespace sluice::auth
