#include "auth/sasl/scram.h"

#include "protocol/core/base64.h"

namespace sluice::auth {
namespace {

std::vector<std::string_view> scram_attributes(std::string_view s) {
    std::vector<std::string_view> parts;
    std::size_t start = 0;
    while (true) {
        const std::size_t at = s.find(',', start);
        if (at == std::string_view::npos) {
            parts.push_back(s.substr(start));
            return parts;
        }
        parts.push_back(s.substr(start, at - start));
        start = at + 1;
    }
}

/// The value of "x=VALUE" when `attr` has that letter; nullopt otherwise.
std::optional<std::string_view> scram_value(std::string_view attr, char letter) {
    if (attr.size() < 2 || attr[0] != letter || attr[1] != '=') {
        return std::nullopt;
    }
    return attr.substr(2);
}

/// RFC 5802: printable = %x21-2B / %x2D-7E (printable ASCII except ',').
bool valid_scram_nonce(std::string_view nonce) {
    if (nonce.empty()) {
        return false;
    }
    for (unsigned char c : nonce) {
        if (c < 0x21 || c > 0x7e || c == ',') {
            return false;
        }
    }
    return true;
}

}  // namespace

std::optional<std::string> decode_sasl_name(std::string_view name) {
    std::string out;
    out.reserve(name.size());
    for (std::size_t i = 0; i < name.size(); ++i) {
        if (name[i] == ',') {
            return std::nullopt;
        }
        if (name[i] != '=') {
            out.push_back(name[i]);
            continue;
        }
        const auto code = name.substr(i + 1, 2);
        if (code == "2C") {
            out.push_back(',');
        } else if (code == "3D") {
            out.push_back('=');
        } else {
            return std::nullopt;
        }
        i += 2;
    }
    return out;
}

scram_server::scram_server(hash_algorithm h, const credential_store& users,
                           std::string server_nonce)
    : hash_(h), users_(users), server_nonce_(std::move(server_nonce)) {
    if (server_nonce_.empty()) {
        server_nonce_ = protocol::base64_encode(random_bytes(24));
    }
}

std::string_view scram_server::mechanism() const {
    return hash_ == hash_algorithm::sha256 ? "SCRAM-SHA-256" : "SCRAM-SHA-512";
}

sasl_step scram_server::fail(std::string client_error, std::string reason) {
    state_ = state::done;
    sasl_step s;
    s.what = sasl_step::outcome::failure;
    s.user = user_;
    s.client_error = std::move(client_error);
    s.reason = std::move(reason);
    return s;
}

sasl_step scram_server::step(std::string_view message) {
    switch (state_) {
        case state::client_first:
            return on_client_first(message);
        case state::client_final:
            return on_client_final(message);
        case state::done:
            break;
    }
    return fail("Authentication failed: unexpected SCRAM message",
                "SCRAM message after the exchange ended");
}

sasl_step scram_server::on_client_first(std::string_view message) {
    constexpr std::string_view malformed =
        "Authentication failed: invalid SCRAM client-first message";
    // gs2-header = cbind-flag "," [ "a=" saslname ] ","
    if (message.starts_with("p=") || message.starts_with("y,")) {
        return fail("Authentication failed: SCRAM channel binding is not supported",
                    "client asked for channel binding");
    }
    if (!message.starts_with("n,")) {
        return fail(std::string(malformed), "client-first message without a gs2 header 'n,'");
    }
    const std::size_t authz_end = message.find(',', 2);
    if (authz_end == std::string_view::npos) {
        return fail(std::string(malformed), "truncated gs2 header");
    }
    const std::string_view authz = message.substr(2, authz_end - 2);
    gs2_header_ = std::string(message.substr(0, authz_end + 1));
    client_first_bare_ = std::string(message.substr(authz_end + 1));
    const auto attrs = scram_attributes(client_first_bare_);
    if (attrs.size() < 2) {
        return fail(std::string(malformed), "client-first message without user name and nonce");
    }
    if (scram_value(attrs[0], 'm')) {
        return fail(std::string(malformed), "mandatory SCRAM extension (m=) is not supported");
    }
    const auto raw_name = scram_value(attrs[0], 'n');
    const auto client_nonce = scram_value(attrs[1], 'r');
    if (!raw_name || !client_nonce) {
        return fail(std::string(malformed), "client-first message must start n=USER,r=NONCE");
    }
    auto name = decode_sasl_name(*raw_name);
    if (!name || !valid_user_name(*name)) {
        return fail(std::string(malformed), "invalid user name in client-first message");
    }
    user_ = std::move(*name);
    if (!valid_scram_nonce(*client_nonce)) {
        return fail(std::string(malformed), "invalid client nonce");
    }
    for (std::size_t i = 2; i < attrs.size(); ++i) {
        const auto eq = attrs[i].find('=');
        if (eq == 0 || eq == std::string_view::npos) {
            return fail(std::string(malformed), "malformed extension in client-first message");
        }
        // compat: Kafka's ScramExtensions; tokenauth=true asks for delegation tokens.
        if (attrs[i].substr(0, eq) == "tokenauth" && attrs[i].substr(eq + 1) == "true") {
            return fail("Authentication failed: delegation tokens are not supported",
                        "client asked for delegation-token authentication");
        }
    }
    if (!authz.empty()) {
        auto authzid = scram_value(authz, 'a');
        auto decoded = authzid ? decode_sasl_name(*authzid) : std::nullopt;
        if (!decoded) {
            return fail(std::string(malformed), "malformed authorization id in gs2 header");
        }
        // compat: Kafka's ScramSaslServer refuses an authorization id other than the user.
        if (*decoded != user_) {
            return fail("Authentication failed: Authentication/Authorization id mismatch",
                        "authorization id differs from the user name");
        }
    }
    auto creds = users_.find(user_);
    const auto& cred = hash_ == hash_algorithm::sha256
                           ? (creds ? creds->scram_sha_256 : std::nullopt)
                           : (creds ? creds->scram_sha_512 : std::nullopt);
    if (cred) {
        known_user_ = true;
        credential_ = *cred;
    } else {
        // A decoy that looks the same from outside: a stable salt per name, random keys.
        known_user_ = false;
        credential_.salt = hmac(hash_algorithm::sha256, users_.decoy_key(),
                                std::string(mechanism()) + ":" + user_);
        credential_.iterations = min_scram_iterations;
        credential_.stored_key = random_bytes(digest_size(hash_));
        credential_.server_key = random_bytes(digest_size(hash_));
    }
    nonce_ = std::string(*client_nonce) + server_nonce_;
    server_first_ = "r=" + nonce_ + ",s=" + protocol::base64_encode(credential_.salt) +
                    ",i=" + std::to_string(credential_.iterations);
    state_ = state::client_final;
    sasl_step s;
    s.what = sasl_step::outcome::challenge;
    s.user = user_;
    s.reply = server_first_;
    return s;
}

sasl_step scram_server::on_client_final(std::string_view message) {
    constexpr std::string_view malformed =
        "Authentication failed: invalid SCRAM client-final message";
    const std::string invalid_credentials =
        "Authentication failed during authentication due to invalid credentials with SASL "
        "mechanism " +
        std::string(mechanism());
    // client-final = "c=" cbind ",r=" nonce ["," extensions] ",p=" proof
    const std::size_t proof_at = message.rfind(",p=");
    if (proof_at == std::string_view::npos) {
        return fail(std::string(malformed), "client-final message without a proof");
    }
    const std::string_view without_proof = message.substr(0, proof_at);
    const std::string_view proof_text = message.substr(proof_at + 3);
    const auto attrs = scram_attributes(without_proof);
    const auto cbind = attrs.size() >= 2 ? scram_value(attrs[0], 'c') : std::nullopt;
    const auto nonce = attrs.size() >= 2 ? scram_value(attrs[1], 'r') : std::nullopt;
    if (!cbind || !nonce) {
        return fail(std::string(malformed), "client-final message must start c=...,r=...");
    }
    const auto cbind_bytes = protocol::base64_decode(*cbind);
    if (!cbind_bytes || *cbind_bytes != gs2_header_) {
        return fail("Authentication failed: invalid SCRAM channel binding",
                    "channel binding does not repeat the gs2 header");
    }
    // compat: librdkafka 2.0.2 sends the client nonce twice (r=CNONCE+CNONCE+SNONCE); Kafka's
    // ScramSaslServer accepts any nonce that ends with the server-first one, and so do we. The
    // nonce as sent is part of the signed AuthMessage either way.
    if (nonce->size() < nonce_.size() ||
        !constant_time_equal(nonce->substr(nonce->size() - nonce_.size()), nonce_)) {
        return fail("Authentication failed: invalid SCRAM nonce", "nonce does not match");
    }
    const auto proof = protocol::base64_decode(proof_text);
    if (!proof || proof->size() != digest_size(hash_)) {
        return fail(std::string(malformed), "client proof is not a base64 digest");
    }
    const std::string auth_message =
        client_first_bare_ + "," + server_first_ + "," + std::string(without_proof);
    const std::string client_signature = hmac(hash_, credential_.stored_key, auth_message);
    std::string client_key = *proof;
    for (std::size_t i = 0; i < client_key.size(); ++i) {
        client_key[i] = static_cast<char>(client_key[i] ^ client_signature[i]);
    }
    const bool proof_ok = constant_time_equal(hash(hash_, client_key), credential_.stored_key);
    if (!known_user_) {
        return fail(invalid_credentials, "unknown user");
    }
    if (!proof_ok) {
        return fail(invalid_credentials, "wrong password (client proof does not verify)");
    }
    state_ = state::done;
    sasl_step s;
    s.what = sasl_step::outcome::success;
    s.user = user_;
    s.reply = "v=" + protocol::base64_encode(hmac(hash_, credential_.server_key, auth_message));
    return s;
}

}  // namespace sluice::auth
