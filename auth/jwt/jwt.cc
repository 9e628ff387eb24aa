// JWS compact verification: header.payload.signature, each base64url. Only RS256 and ES256;
// "none", HMAC and every other algorithm are refused (so a public key can never be used as an
// HMAC secret).
#include "auth/jwt/jwt.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>

#include "protocol/core/base64.h"
#include "protocol/core/json.h"

namespace sluice::auth {
namespace {

jwt_verdict fail(std::string reason) {
    return jwt_verdict::refused(std::move(reason));
}

/// ES256's JOSE signature (RFC 7518 section 3.4) is r||s, 32 bytes each; OpenSSL wants DER.
std::optional<std::string> ecdsa_raw_to_der(std::string_view raw) {
    if (raw.size() != 64) {
        return std::nullopt;
    }
    const auto* p = reinterpret_cast<const unsigned char*>(raw.data());
    BIGNUM* r = BN_bin2bn(p, 32, nullptr);
    BIGNUM* s = BN_bin2bn(p + 32, 32, nullptr);
    ECDSA_SIG* sig = ECDSA_SIG_new();
    if (r == nullptr || s == nullptr || sig == nullptr || ECDSA_SIG_set0(sig, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(sig);
        return std::nullopt;
    }
    unsigned char* der = nullptr;
    const int len = i2d_ECDSA_SIG(sig, &der);
    ECDSA_SIG_free(sig);
    if (len <= 0) {
        return std::nullopt;
    }
    std::string out(reinterpret_cast<const char*>(der), static_cast<std::size_t>(len));
    OPENSSL_free(der);
    return out;
}

bool verify_signature(const jwt_key& key, std::string_view signed_part,
                      std::string_view signature) {
    std::string der;
    if (key.kind == jwt_key::type::ec_p256) {
        auto d = ecdsa_raw_to_der(signature);
        if (!d) {
            return false;
        }
        der = std::move(*d);
        signature = der;
    }
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    bool ok = ctx != nullptr &&
              EVP_DigestVerifyInit(ctx, nullptr, EVP_sha256(), nullptr,
                                   static_cast<EVP_PKEY*>(key.pkey.get())) == 1 &&
              EVP_DigestVerify(ctx, reinterpret_cast<const unsigned char*>(signature.data()),
                               signature.size(),
                               reinterpret_cast<const unsigned char*>(signed_part.data()),
                               signed_part.size()) == 1;
    EVP_MD_CTX_free(ctx);
    return ok;
}

std::optional<std::string> string_claim(const rapidjson::Value& obj, const std::string& name) {
    auto it = obj.FindMember(rapidjson::StringRef(name.data(), name.size()));
    if (it == obj.MemberEnd() || !it->value.IsString()) {
        return std::nullopt;
    }
    return std::string(it->value.GetString(), it->value.GetStringLength());
}

/// A NumericDate claim (seconds, possibly fractional): missing -> nullopt; a value of the wrong
/// type -> nullopt with `error` set.
std::optional<std::int64_t> time_claim(const rapidjson::Value& obj, const char* name,
                                       std::string& error) {
    auto it = obj.FindMember(name);
    if (it == obj.MemberEnd()) {
        return std::nullopt;
    }
    if (it->value.IsInt64()) {
        return it->value.GetInt64();
    }
    if (it->value.IsNumber()) {
        const double d = it->value.GetDouble();
        if (std::isfinite(d) && std::fabs(d) < 1e15) {
            return static_cast<std::int64_t>(std::floor(d));
        }
    }
    error = std::string("claim '") + name + "' is not a number";
    return std::nullopt;
}

}  // namespace

std::optional<std::string> base64url_decode(std::string_view text) {
    return protocol::base64_decode(text, protocol::base64_alphabet::url);
}

std::string base64url_encode(std::string_view bytes) {
    return protocol::base64_encode(bytes, protocol::base64_alphabet::url);
}

jwt_verdict jwt_verifier::verify(std::string_view token,
                                 std::chrono::system_clock::time_point now) const {
    if (token.empty()) {
        return fail("empty token");
    }
    if (token.size() > settings_.max_token_bytes) {
        return fail("token of " + std::to_string(token.size()) + " bytes exceeds the limit of " +
                    std::to_string(settings_.max_token_bytes));
    }
    const auto dot1 = token.find('.');
    const auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
    if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos) {
        return fail("not a JWS compact token (expected three dot-separated parts)");
    }
    auto header_json = base64url_decode(token.substr(0, dot1));
    auto payload_json = base64url_decode(token.substr(dot1 + 1, dot2 - dot1 - 1));
    auto signature = base64url_decode(token.substr(dot2 + 1));
    if (!header_json || !payload_json || !signature) {
        return fail("a token part is not base64url");
    }
    rapidjson::Document header;
    if (!protocol::parse_json(header, *header_json) || !header.IsObject()) {
        return fail("the token header is not a JSON object");
    }
    jwt_claims claims;
    claims.alg = string_claim(header, "alg").value_or("");
    claims.kid = string_claim(header, "kid").value_or("");
    jwt_key::type wanted;
    if (claims.alg == "RS256") {
        wanted = jwt_key::type::rsa;
    } else if (claims.alg == "ES256") {
        wanted = jwt_key::type::ec_p256;
    } else {
        return fail("unsupported algorithm '" + claims.alg.substr(0, 16) +
                    "' (RS256 and ES256 are accepted)");
    }
    if (header.HasMember("crit")) {
        return fail("the token header has critical extensions we do not understand");
    }
    const std::string_view signed_part = token.substr(0, dot2);
    bool kid_known = false;
    bool verified = false;
    const auto key_set = keys();
    for (const auto& key : key_set->keys()) {
        if (!claims.kid.empty() && key.kid != claims.kid) {
            continue;
        }
        kid_known = true;
        if (key.kind == wanted && verify_signature(key, signed_part, *signature)) {
            verified = true;
            break;
        }
    }
    if (!kid_known) {
        return fail(claims.kid.empty() ? std::string("no public key is configured")
                                       : "unknown key id '" + claims.kid.substr(0, 64) + "'");
    }
    if (!verified) {
        return fail("bad signature");
    }

    rapidjson::Document payload;
    if (!protocol::parse_json(payload, *payload_json) || !payload.IsObject()) {
        return fail("the token payload is not a JSON object");
    }
    const std::int64_t now_s =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    const std::int64_t skew = settings_.clock_skew.count();
    std::string claim_error;
    const auto exp = time_claim(payload, "exp", claim_error);
    if (!claim_error.empty()) {
        return fail(claim_error);
    }
    if (!exp) {
        return fail("the token has no 'exp' claim");
    }
    // Written so that no exp, however far from now, overflows.
    if (*exp < now_s - skew) {
        const auto ago = static_cast<std::uint64_t>(now_s) - static_cast<std::uint64_t>(*exp);
        return fail("the token expired " + std::to_string(ago) + " s ago");
    }
    claims.expires_at = *exp;
    const auto nbf = time_claim(payload, "nbf", claim_error);
    if (!claim_error.empty()) {
        return fail(claim_error);
    }
    if (nbf && now_s + skew < *nbf) {
        return fail("the token is not valid yet ('nbf' in the future)");
    }
    if (!settings_.expected_issuer.empty()) {
        auto iss = string_claim(payload, "iss");
        if (!iss || *iss != settings_.expected_issuer) {
            return fail("the token's issuer is not the expected one");
        }
    }
    if (!settings_.expected_audience.empty()) {
        const auto& wanted_aud = settings_.expected_audience;
        const auto expected = [&](std::string_view a) {
            return std::find(wanted_aud.begin(), wanted_aud.end(), a) != wanted_aud.end();
        };
        bool match = false;
        auto aud = payload.FindMember("aud");
        if (aud != payload.MemberEnd() && aud->value.IsString()) {
            match = expected(aud->value.GetString());
        } else if (aud != payload.MemberEnd() && aud->value.IsArray()) {
            for (const auto& a : aud->value.GetArray()) {
                match = match || (a.IsString() && expected(a.GetString()));
            }
        }
        if (!match) {
            return fail("the token's audience does not include the expected one");
        }
    }
    auto sub = string_claim(payload, settings_.subject_claim);
    if (!sub || sub->empty()) {
        return fail("the token has no string claim '" + settings_.subject_claim + "'");
    }
    claims.subject = std::move(*sub);
    return claims;
}

void jwt_verifier::replace_keys(jwt_key_set keys) {
    auto next = std::make_shared<const jwt_key_set>(std::move(keys));
    std::lock_guard lock(keys_mutex_);
    keys_.swap(next);
}

std::shared_ptr<const jwt_key_set> jwt_verifier::keys() const {
    std::lock_guard lock(keys_mutex_);
    return keys_;
}

}  // namespace sluice::auth
