// Test helpers: RSA and EC P-256 keys made with OpenSSL, and JWTs signed with them, so that the
// verifier is checked against tokens nobody else produced.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "auth/jwt/jwt.h"

namespace sluice::auth::test {

using pkey_ptr = std::shared_ptr<EVP_PKEY>;

inline pkey_ptr make_rsa_key() {
    return pkey_ptr(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", std::size_t{2048}), EVP_PKEY_free);
}

inline pkey_ptr make_ec_key() {
    return pkey_ptr(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"), EVP_PKEY_free);
}

inline std::string public_pem(const pkey_ptr& key) {
    BIO* bio = BIO_new(BIO_s_mem());
    PEM_write_bio_PUBKEY(bio, key.get());
    char* data = nullptr;
    const long len = BIO_get_mem_data(bio, &data);
    std::string out(data, static_cast<std::size_t>(len));
    BIO_free(bio);
    return out;
}

inline std::string bn_param(const pkey_ptr& key, const char* name, std::size_t pad_to = 0) {
    BIGNUM* bn = nullptr;
    EVP_PKEY_get_bn_param(key.get(), name, &bn);
    std::string out(pad_to ? pad_to : static_cast<std::size_t>(BN_num_bytes(bn)), '\0');
    BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(out.size()));
    BN_free(bn);
    return out;
}

/// One JWKS key object for `key` (RSA or EC P-256).
inline std::string jwk_json(const pkey_ptr& key, const std::string& kid) {
    if (EVP_PKEY_is_a(key.get(), "RSA")) {
        return R"({"kty":"RSA","use":"sig","kid":")" + kid + R"(","n":")" +
               base64url_encode(bn_param(key, OSSL_PKEY_PARAM_RSA_N)) + R"(","e":")" +
               base64url_encode(bn_param(key, OSSL_PKEY_PARAM_RSA_E)) + R"("})";
    }
    return R"({"kty":"EC","crv":"P-256","kid":")" + kid + R"(","x":")" +
           base64url_encode(bn_param(key, OSSL_PKEY_PARAM_EC_PUB_X, 32)) + R"(","y":")" +
           base64url_encode(bn_param(key, OSSL_PKEY_PARAM_EC_PUB_Y, 32)) + R"("})";
}

/// A token of the given header and payload JSON texts, signed with `key` (RS256 for an RSA key,
/// ES256 for EC), whatever the header says.
inline std::string sign_parts(const pkey_ptr& key, std::string_view header_json,
                              std::string_view payload_json) {
    const std::string input = base64url_encode(header_json) + "." + base64url_encode(payload_json);
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    std::size_t len = 0;
    EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, key.get());
    EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()),
                   input.size());
    std::string sig(len, '\0');
    EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                   reinterpret_cast<const unsigned char*>(input.data()), input.size());
    sig.resize(len);
    EVP_MD_CTX_free(ctx);
    if (EVP_PKEY_is_a(key.get(), "EC")) {
        // DER -> JOSE's r||s.
        const auto* p = reinterpret_cast<const unsigned char*>(sig.data());
        ECDSA_SIG* es = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
        std::string raw(64, '\0');
        BN_bn2binpad(ECDSA_SIG_get0_r(es), reinterpret_cast<unsigned char*>(raw.data()), 32);
        BN_bn2binpad(ECDSA_SIG_get0_s(es), reinterpret_cast<unsigned char*>(raw.data()) + 32, 32);
        ECDSA_SIG_free(es);
        sig = raw;
    }
    return input + "." + base64url_encode(sig);
}

/// A signed token: header {"alg":ALG,"kid":KID} (kid omitted when empty) and `payload_json`.
inline std::string sign_jwt(const pkey_ptr& key, const std::string& alg, const std::string& kid,
                            const std::string& payload_json) {
    std::string header = R"({"alg":")" + alg + R"(","typ":"JWT")";
    if (!kid.empty()) {
        header += R"(,"kid":")" + kid + "\"";
    }
    header += "}";
    return sign_parts(key, header, payload_json);
}

}  // namespace sluice::auth::test
