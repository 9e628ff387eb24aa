// Public keys for JWT verification: PEM SubjectPublicKeyInfo files and JWKS documents, turned
// into OpenSSL 3 EVP_PKEYs (EVP_PKEY_fromdata for JWKS's raw RSA n/e and EC x/y).
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include "auth/jwt/jwt.h"
#include "protocol/core/base64.h"
#include "protocol/core/json.h"

namespace sluice::auth {
namespace {

std::shared_ptr<void> own(EVP_PKEY* k) {
    return std::shared_ptr<void>(k, [](void* p) { EVP_PKEY_free(static_cast<EVP_PKEY*>(p)); });
}

/// The key's type when we support it: RSA of at least 2048 bits, or EC on P-256.
std::optional<jwt_key::type> key_type(EVP_PKEY* k) {
    if (EVP_PKEY_is_a(k, "RSA")) {
        if (EVP_PKEY_get_bits(k) < 2048) {
            return std::nullopt;
        }
        return jwt_key::type::rsa;
    }
    if (EVP_PKEY_is_a(k, "EC")) {
        char group[64] = {};
        std::size_t len = 0;
        if (EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
                                           &len) == 1 &&
            (std::string_view(group) == "prime256v1" || std::string_view(group) == "P-256")) {
            return jwt_key::type::ec_p256;
        }
    }
    return std::nullopt;
}

std::string read_file(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        throw std::runtime_error("cannot read " + file.string());
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string string_member(const rapidjson::Value& obj, const char* name) {
    auto it = obj.FindMember(name);
    if (it == obj.MemberEnd() || !it->value.IsString()) {
        return {};
    }
    return std::string(it->value.GetString(), it->value.GetStringLength());
}

std::string required_b64(const rapidjson::Value& obj, const char* name, const std::string& kid) {
    auto text = string_member(obj, name);
    auto bytes = base64url_decode(text);
    if (text.empty() || !bytes || bytes->empty()) {
        throw std::runtime_error("JWKS key '" + kid + "': '" + name +
                                 "' is missing or not base64url");
    }
    return *bytes;
}

struct param_builder {
    OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
    OSSL_PARAM* params = nullptr;
    std::vector<BIGNUM*> bignums;
    ~param_builder() {
        OSSL_PARAM_free(params);
        OSSL_PARAM_BLD_free(bld);
        for (auto* b : bignums) {
            BN_free(b);
        }
    }
    void bignum(const char* key, const std::string& big_endian) {
        BIGNUM* b = BN_bin2bn(reinterpret_cast<const unsigned char*>(big_endian.data()),
                              static_cast<int>(big_endian.size()), nullptr);
        bignums.push_back(b);
        if (b == nullptr || OSSL_PARAM_BLD_push_BN(bld, key, b) != 1) {
            throw std::runtime_error("OpenSSL: cannot build a key parameter");
        }
    }
};

EVP_PKEY* from_data(const char* type, param_builder& pb) {
    pb.params = OSSL_PARAM_BLD_to_param(pb.bld);
    EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
    EVP_PKEY* key = nullptr;
    const bool ok = ctx != nullptr && pb.params != nullptr && EVP_PKEY_fromdata_init(ctx) == 1 &&
                    EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, pb.params) == 1;
    EVP_PKEY_CTX_free(ctx);
    return ok ? key : nullptr;
}

EVP_PKEY* rsa_from_jwk(const rapidjson::Value& jwk, const std::string& kid) {
    param_builder pb;
    pb.bignum(OSSL_PKEY_PARAM_RSA_N, required_b64(jwk, "n", kid));
    pb.bignum(OSSL_PKEY_PARAM_RSA_E, required_b64(jwk, "e", kid));
    return from_data("RSA", pb);
}

EVP_PKEY* ec_from_jwk(const rapidjson::Value& jwk, const std::string& kid) {
    if (string_member(jwk, "crv") != "P-256") {
        return nullptr;
    }
    const auto x = required_b64(jwk, "x", kid);
    const auto y = required_b64(jwk, "y", kid);
    if (x.size() != 32 || y.size() != 32) {
        throw std::runtime_error("JWKS key '" + kid + "': x and y must be 32 bytes for P-256");
    }
    std::string point = "\x04" + x + y;  // SEC 1 uncompressed point
    param_builder pb;
    char group[] = "prime256v1";
    if (OSSL_PARAM_BLD_push_utf8_string(pb.bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) != 1 ||
        OSSL_PARAM_BLD_push_octet_string(pb.bld, OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                         point.size()) != 1) {
        throw std::runtime_error("OpenSSL: cannot build a key parameter");
    }
    return from_data("EC", pb);
}

}  // namespace

void jwt_key_set::add_pem(std::string kid, std::string_view pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    EVP_PKEY* k = bio ? PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr) : nullptr;
    BIO_free(bio);
    if (k == nullptr) {
        throw std::runtime_error("public key '" + kid + "' is not a PEM PUBLIC KEY");
    }
    auto owned = own(k);
    auto t = key_type(k);
    if (!t) {
        throw std::runtime_error("public key '" + kid +
                                 "' is neither RSA (2048 bits or more) nor EC P-256");
    }
    keys_.push_back(jwt_key{std::move(kid), *t, std::move(owned)});
}

void jwt_key_set::add_jwks(std::string_view json) {
    rapidjson::Document doc;
    if (!protocol::parse_json(doc, json) || !doc.IsObject()) {
        throw std::runtime_error("JWKS is not a JSON object");
    }
    auto keys = doc.FindMember("keys");
    if (keys == doc.MemberEnd() || !keys->value.IsArray()) {
        throw std::runtime_error("JWKS has no \"keys\" array");
    }
    // A document with one bad key adds none of its keys.
    std::vector<jwt_key> found;
    for (const auto& jwk : keys->value.GetArray()) {
        if (!jwk.IsObject()) {
            throw std::runtime_error("JWKS: a key is not a JSON object");
        }
        const std::string kid = string_member(jwk, "kid");
        const std::string kty = string_member(jwk, "kty");
        const std::string use = string_member(jwk, "use");
        if (!use.empty() && use != "sig") {
            continue;
        }
        EVP_PKEY* k = nullptr;
        if (kty == "RSA") {
            k = rsa_from_jwk(jwk, kid);
        } else if (kty == "EC") {
            k = ec_from_jwk(jwk, kid);
            if (k == nullptr && string_member(jwk, "crv") != "P-256") {
                continue;  // another curve: not one we verify
            }
        } else {
            continue;
        }
        if (k == nullptr) {
            throw std::runtime_error("JWKS key '" + kid + "': not a valid " + kty + " key");
        }
        auto owned = own(k);
        auto t = key_type(k);
        if (!t) {
            throw std::runtime_error("JWKS key '" + kid +
                                     "': RSA keys need 2048 bits or more");
        }
        found.push_back(jwt_key{kid, *t, std::move(owned)});
    }
    keys_.insert(keys_.end(), std::make_move_iterator(found.begin()),
                 std::make_move_iterator(found.end()));
}

void jwt_key_set::load_pem_file(const std::filesystem::path& file) {
    try {
        add_pem(file.stem().string(), read_file(file));
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(file.string() + ": " + e.what());
    }
}

void jwt_key_set::load_jwks_file(const std::filesystem::path& file) {
    try {
        add_jwks(read_file(file));
    } catch (const std::runtime_error& e) {
        throw std::runtime_error(file.string() + ": " + e.what());
    }
}

}  // namespace sluice::auth
