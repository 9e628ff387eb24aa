#include "auth/sasl/sasl_client.h"

#include <charconv>
#include <vector>

#include "auth/crypto.h"
#include "protocol/core/base64.h"

namespace sluice::auth {
namespace {

class plain_client final : public sasl_client {
public:
    plain_client(std::string user, std::string password)
        : user_(std::move(user)), password_(std::move(password)) {}
    std::string_view mechanism() const override { return "PLAIN"; }
    std::string start() override {
        std::string m;
        m.push_back('\0');
        m += user_;
        m.push_back('\0');
        m += password_;
        return m;
    }
    sasl_client_step step(std::string_view) override {
        return {sasl_client_step::outcome::done, {}, {}};
    }

private:
    std::string user_;
    std::string password_;
};

/// OAUTHBEARER (RFC 7628, KIP-255): the token in the GS2 header's key-value pairs; the server
/// answers an empty message on success (a refusal comes as the SaslAuthenticate error).
class oauthbearer_client final : public sasl_client {
public:
    explicit oauthbearer_client(std::string token) : token_(std::move(token)) {}
    std::string_view mechanism() const override { return "OAUTHBEARER"; }
    std::string start() override { return "n,,\x01" "auth=Bearer " + token_ + "\x01\x01"; }
    sasl_client_step step(std::string_view server_message) override {
        if (server_message.empty()) {
            return {sasl_client_step::outcome::done, {}, {}};
        }
        // RFC 7628 3.2.2: a JSON error status (never the token).
        return {sasl_client_step::outcome::failure, {},
                "server refused the token: " + std::string(server_message.substr(0, 200))};
    }

private:
    std::string token_;
};

/// SCRAM's saslname: ',' as "=2C", '=' as "=3D".
std::string scram_client_name(std::string_view name) {
    std::string out;
    for (char c : name) {
        if (c == ',') {
            out += "=2C";
        } else if (c == '=') {
            out += "=3D";
        } else {
            out.push_back(c);
        }
    }
    return out;
}

/// The value of attribute `key` ("r=...") among the comma-separated ones, or nullopt.
std::optional<std::string_view> scram_client_attribute(std::string_view message, char key) {
    std::size_t at = 0;
    while (at <= message.size()) {
        const std::size_t end = std::min(message.find(',', at), message.size());
        const std::string_view part = message.substr(at, end - at);
        if (part.size() >= 2 && part[0] == key && part[1] == '=') {
            return part.substr(2);
        }
        at = end + 1;
    }
    return std::nullopt;
}

std::string xor_bytes(std::string a, std::string_view b) {
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
        a[i] = static_cast<char>(a[i] ^ b[i]);
    }
    return a;
}

class scram_client final : public sasl_client {
public:
    scram_client(hash_algorithm h, std::string user, std::string password, std::string nonce)
        : hash_(h), user_(std::move(user)), password_(std::move(password)),
          nonce_(std::move(nonce)) {
        if (nonce_.empty()) {
            nonce_ = protocol::base64_encode(random_bytes(24));
        }
    }
    std::string_view mechanism() const override {
        return hash_ == hash_algorithm::sha256 ? "SCRAM-SHA-256" : "SCRAM-SHA-512";
    }
    std::string start() override {
        client_first_bare_ = "n=" + scram_client_name(user_) + ",r=" + nonce_;
        state_ = state::server_first;
        return "n,," + client_first_bare_;
    }
    sasl_client_step step(std::string_view message) override {
        switch (state_) {
            case state::server_first:
                return on_server_first(message);
            case state::server_final:
                return on_server_final(message);
            default:
                return fail("SCRAM message out of order");
        }
    }

private:
    enum class state { start, server_first, server_final, done };

    sasl_client_step fail(std::string reason) {
        state_ = state::done;
        return {sasl_client_step::outcome::failure, {}, std::move(reason)};
    }

    sasl_client_step on_server_first(std::string_view message) {
        if (const auto e = scram_client_attribute(message, 'e')) {
            return fail("server refused the login: " + std::string(e->substr(0, 128)));
        }
        const auto nonce = scram_client_attribute(message, 'r');
        const auto salt64 = scram_client_attribute(message, 's');
        const auto iterations_text = scram_client_attribute(message, 'i');
        if (!nonce || !salt64 || !iterations_text) {
            return fail("malformed SCRAM server-first message");
        }
        if (nonce->size() <= nonce_.size() || nonce->substr(0, nonce_.size()) != nonce_) {
            return fail("SCRAM server nonce does not extend the client's");
        }
        const auto salt = protocol::base64_decode(*salt64);
        int iterations = 0;
        const auto [p, ec] = std::from_chars(iterations_text->data(),
                                             iterations_text->data() + iterations_text->size(),
                                             iterations);
        if (!salt || ec != std::errc() || p != iterations_text->data() + iterations_text->size() ||
            iterations < 1 || iterations > 1000000) {
            return fail("malformed SCRAM salt or iteration count");
        }
        const std::string salted = pbkdf2(hash_, password_, *salt, iterations);
        const std::string client_key = hmac(hash_, salted, "Client Key");
        const std::string stored_key = hash(hash_, client_key);
        const std::string final_bare = "c=biws,r=" + std::string(*nonce);
        const std::string auth_message =
            client_first_bare_ + "," + std::string(message) + "," + final_bare;
        const std::string signature = hmac(hash_, stored_key, auth_message);
        const std::string proof = xor_bytes(client_key, signature);
        const std::string server_key = hmac(hash_, salted, "Server Key");
        server_signature_ = hmac(hash_, server_key, auth_message);
        state_ = state::server_final;
        return {sasl_client_step::outcome::send,
                final_bare + ",p=" + protocol::base64_encode(proof), {}};
    }

    sasl_client_step on_server_final(std::string_view message) {
        if (const auto e = scram_client_attribute(message, 'e')) {
            return fail("server refused the login: " + std::string(e->substr(0, 128)));
        }
        const auto v = scram_client_attribute(message, 'v');
        const auto got = v ? protocol::base64_decode(*v) : std::nullopt;
        if (!got || !constant_time_equal(*got, server_signature_)) {
            return fail("the server's SCRAM signature does not verify");
        }
        state_ = state::done;
        return {sasl_client_step::outcome::done, {}, {}};
    }

    hash_algorithm hash_;
    std::string user_;
    std::string password_;
    std::string nonce_;
    state state_ = state::start;
    std::string client_first_bare_;
    std::string server_signature_;
};

}  // namespace

std::unique_ptr<sasl_client> make_sasl_client(std::string_view mechanism, std::string user,
                                              std::string password, std::string client_nonce) {
    if (mechanism == "PLAIN") {
        return std::make_unique<plain_client>(std::move(user), std::move(password));
    }
    if (mechanism == "SCRAM-SHA-256") {
        return std::make_unique<scram_client>(hash_algorithm::sha256, std::move(user),
                                              std::move(password), std::move(client_nonce));
    }
    if (mechanism == "SCRAM-SHA-512") {
        return std::make_unique<scram_client>(hash_algorithm::sha512, std::move(user),
                                              std::move(password), std::move(client_nonce));
    }
    if (mechanism == "OAUTHBEARER") {
        return std::make_unique<oauthbearer_client>(std::move(password));
    }
    return nullptr;
}

}  // namespace sluice::auth
