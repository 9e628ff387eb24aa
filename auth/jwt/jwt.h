// Verification of signed JSON Web Tokens (RFC 7519, JWS compact form RFC 7515) for the
// OAUTHBEARER SASL mechanism and HTTP Bearer authentication: RS256 (RSASSA-PKCS1-v1_5 with
// SHA-256) and ES256 (ECDSA P-256 with SHA-256), against public keys from PEM files or a JWKS
// file (RFC 7517). Owned by auth/jwt. The verifier never logs and never puts the token in an
// error reason.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::auth {

/// RFC 4648 section 5 (base64url), with or without '=' padding; nullopt for anything else.
std::optional<std::string> base64url_decode(std::string_view text);
/// base64url without padding (tests sign tokens with it).
std::string base64url_encode(std::string_view bytes);

/// One public key a token may be signed with.
struct jwt_key {
    enum class type { rsa, ec_p256 };
    /// The JWKS `kid`, or for a PEM file its file name without extension.
    std::string kid;
    type kind = type::rsa;
    /// An EVP_PKEY*, owned; opaque so that this header does not pull in OpenSSL.
    std::shared_ptr<void> pkey;
};

/// The keys tokens are checked against. Built once at start; read-only afterwards (thread-safe).
class jwt_key_set {
public:
    /// Adds a PEM "PUBLIC KEY" (SubjectPublicKeyInfo), RSA or EC P-256. Throws
    /// std::runtime_error naming `kid` when the text is not such a key.
    void add_pem(std::string kid, std::string_view pem);
    /// Adds every RSA (n, e) and EC P-256 (x, y) key of a JWKS document; keys of other types or
    /// with `use` other than "sig" are skipped. Throws std::runtime_error when the document is
    /// not a JWKS or a key of a supported type is malformed; then none of its keys is added.
    void add_jwks(std::string_view json);

    /// Reads a PEM file (kid: the file name without extension) / a JWKS file. Throw
    /// std::runtime_error naming the file.
    void load_pem_file(const std::filesystem::path& file);
    void load_jwks_file(const std::filesystem::path& file);

    const std::vector<jwt_key>& keys() const { return keys_; }
    bool empty() const { return keys_.empty(); }

private:
    std::vector<jwt_key> keys_;
};

/// What a token must satisfy beyond its signature.
struct jwt_settings {
    /// When not empty, `aud` must be (or contain) one of these.
    std::vector<std::string> expected_audience;
    /// `iss` must equal this when set.
    std::string expected_issuer;
    /// The claim that names the principal (Kafka's sasl.oauthbearer.sub.claim.name).
    std::string subject_claim = "sub";
    /// Tolerance for exp and nbf (Kafka's default validator allows 30 s).
    std::chrono::seconds clock_skew{30};
    /// Longer tokens are refused before any decoding.
    std::size_t max_token_bytes = 16384;
};

/// A verified token's claims that the servers use.
struct jwt_claims {
    std::string subject;
    /// `exp`, in seconds since the epoch.
    std::int64_t expires_at = 0;
    std::string kid;
    std::string alg;
};

/// What verify answers: the claims, or a one-line reason the token was refused. It has the part
/// of std::expected's interface the callers use; it is not std::expected because the fuzz build's
/// clang 14 cannot compile libstdc++'s <expected>, and the token parser is fuzzed.
class jwt_verdict {
public:
    jwt_verdict(jwt_claims claims) : claims_(std::move(claims)) {}
    static jwt_verdict refused(std::string reason) {
        jwt_verdict v;
        v.reason_ = std::move(reason);
        return v;
    }

    bool has_value() const { return claims_.has_value(); }
    explicit operator bool() const { return has_value(); }
    const jwt_claims& operator*() const { return *claims_; }
    const jwt_claims* operator->() const { return &*claims_; }
    /// Why the token was refused (empty when it verified).
    const std::string& error() const { return reason_; }

private:
    jwt_verdict() = default;
    std::optional<jwt_claims> claims_;
    std::string reason_;
};

/// Checks tokens. Thread-safe: verify runs on every io thread while replace_keys (SIGHUP, when
/// an identity provider rotated its keys) swaps the key set; a check in progress finishes with
/// the set it started with.
class jwt_verifier {
public:
    jwt_verifier(jwt_key_set keys, jwt_settings settings)
        : keys_(std::make_shared<const jwt_key_set>(std::move(keys))),
          settings_(std::move(settings)) {}

    /// The claims of `token` when its signature, exp, nbf, aud and iss hold at `now`;
    /// otherwise a one-line reason that never contains the token.
    jwt_verdict verify(
        std::string_view token,
        std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) const;

    const jwt_settings& settings() const { return settings_; }

    /// Tokens are checked against `keys` from now on.
    void replace_keys(jwt_key_set keys);
    /// The key set in use.
    std::shared_ptr<const jwt_key_set> keys() const;

private:
    mutable std::mutex keys_mutex_;
    std::shared_ptr<const jwt_key_set> keys_;
    jwt_settings settings_;
};

}  // namespace sluice::auth
