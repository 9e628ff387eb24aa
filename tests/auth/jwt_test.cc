// JWT verification (RS256, ES256) against keys and tokens the test makes itself.
#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "auth/jwt/jwt.h"
#include "jwt_test_support.h"

namespace sluice::auth {
namespace {

using namespace std::chrono_literals;
using test::make_ec_key;
using test::make_rsa_key;
using test::sign_jwt;

const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));
constexpr std::int64_t now_s = 1700000000;

std::string claims(std::int64_t exp, const std::string& extra = {}) {
    return R"({"sub":"alice","exp":)" + std::to_string(exp) + extra + "}";
}

struct keys_fixture : ::testing::Test {
    test::pkey_ptr rsa = make_rsa_key();
    test::pkey_ptr ec = make_ec_key();
    test::pkey_ptr other = make_rsa_key();

    jwt_verifier verifier(jwt_settings s = {}) {
        jwt_key_set keys;
        keys.add_jwks(R"({"keys":[)" + test::jwk_json(rsa, "r1") + "," +
                      test::jwk_json(ec, "e1") + "]}");
        return jwt_verifier(std::move(keys), std::move(s));
    }
};

using Jwt = keys_fixture;

TEST(Base64Url, DecodesWithAndWithoutPadding) {
    EXPECT_EQ(base64url_decode("_-8"), std::string("\xff\xef"));
    EXPECT_EQ(base64url_decode("_-8="), std::string("\xff\xef"));
    EXPECT_FALSE(base64url_decode("/+8"));
    EXPECT_EQ(base64url_encode("\xff\xef"), "_-8");
}

TEST_F(Jwt, Rs256FromJwksVerifies) {
    auto v = verifier();
    auto c = v.verify(sign_jwt(rsa, "RS256", "r1", claims(now_s + 60)), now);
    ASSERT_TRUE(c) << c.error();
    EXPECT_EQ(c->subject, "alice");
    EXPECT_EQ(c->expires_at, now_s + 60);
    EXPECT_EQ(c->kid, "r1");
}

TEST_F(Jwt, Es256FromJwksVerifies) {
    auto v = verifier();
    auto c = v.verify(sign_jwt(ec, "ES256", "e1", claims(now_s + 60)), now);
    ASSERT_TRUE(c) << c.error();
    EXPECT_EQ(c->alg, "ES256");
}

TEST_F(Jwt, PemKeysVerifyWithFileStemAsKid) {
    const auto dir = std::filesystem::temp_directory_path() / "sluice-jwt-test";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "issuer-a.pem") << test::public_pem(ec);
    std::ofstream(dir / "issuer-b.pem") << test::public_pem(rsa);
    jwt_key_set keys;
    keys.load_pem_file(dir / "issuer-a.pem");
    keys.load_pem_file(dir / "issuer-b.pem");
    std::filesystem::remove_all(dir);
    jwt_verifier v(std::move(keys), {});

    EXPECT_TRUE(v.verify(sign_jwt(ec, "ES256", "issuer-a", claims(now_s + 60)), now));
    // No kid: every key of the algorithm's type is tried.
    EXPECT_TRUE(v.verify(sign_jwt(rsa, "RS256", "", claims(now_s + 60)), now));
    auto wrong_kid = v.verify(sign_jwt(rsa, "RS256", "issuer-a", claims(now_s + 60)), now);
    ASSERT_FALSE(wrong_kid);
    EXPECT_EQ(wrong_kid.error(), "bad signature");
}

TEST_F(Jwt, ExpiredTokenRefusedBeyondSkew) {
    auto v = verifier();
    EXPECT_TRUE(v.verify(sign_jwt(rsa, "RS256", "r1", claims(now_s - 10)), now));  // within 30 s
    auto c = v.verify(sign_jwt(rsa, "RS256", "r1", claims(now_s - 31)), now);
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().find("expired"), std::string::npos);
}

TEST_F(Jwt, MissingExpRefused) {
    auto v = verifier();
    auto c = v.verify(sign_jwt(rsa, "RS256", "r1", R"({"sub":"alice"})"), now);
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().find("exp"), std::string::npos);
}

TEST_F(Jwt, NotBeforeInTheFutureRefused) {
    auto v = verifier();
    auto c = v.verify(
        sign_jwt(rsa, "RS256", "r1", claims(now_s + 600, ",\"nbf\":" + std::to_string(now_s + 60))),
        now);
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().find("nbf"), std::string::npos);
}

TEST_F(Jwt, AudienceAndIssuerChecked) {
    jwt_settings s;
    s.expected_audience = {"sluice", "sluice-2"};
    s.expected_issuer = "https://idp.example";
    auto v = verifier(s);
    const std::string good = R"(,"aud":["other","sluice"],"iss":"https://idp.example")";
    EXPECT_TRUE(v.verify(sign_jwt(rsa, "RS256", "r1", claims(now_s + 60, good)), now));
    auto wrong_aud = v.verify(
        sign_jwt(rsa, "RS256", "r1", claims(now_s + 60, R"(,"aud":"x","iss":"https://idp.example")")),
        now);
    ASSERT_FALSE(wrong_aud);
    EXPECT_NE(wrong_aud.error().find("audience"), std::string::npos);
    auto wrong_iss = v.verify(
        sign_jwt(rsa, "RS256", "r1", claims(now_s + 60, R"(,"aud":"sluice","iss":"evil")")), now);
    ASSERT_FALSE(wrong_iss);
    EXPECT_NE(wrong_iss.error().find("issuer"), std::string::npos);
}

TEST_F(Jwt, SubjectClaimNameConfigurable) {
    jwt_settings s;
    s.subject_claim = "client_id";
    auto v = verifier(s);
    auto c = v.verify(
        sign_jwt(rsa, "RS256", "r1", claims(now_s + 60, R"(,"client_id":"svc-7")")), now);
    ASSERT_TRUE(c) << c.error();
    EXPECT_EQ(c->subject, "svc-7");
    EXPECT_FALSE(v.verify(sign_jwt(rsa, "RS256", "r1", claims(now_s + 60)), now));
}

TEST_F(Jwt, SignatureByAnotherKeyRefused) {
    auto v = verifier();
    auto c = v.verify(sign_jwt(other, "RS256", "r1", claims(now_s + 60)), now);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error(), "bad signature");
}

TEST_F(Jwt, TamperedPayloadRefused) {
    auto v = verifier();
    auto token = sign_jwt(ec, "ES256", "e1", claims(now_s + 60));
    const auto dot1 = token.find('.');
    const auto dot2 = token.find('.', dot1 + 1);
    token.replace(dot1 + 1, dot2 - dot1 - 1,
                  base64url_encode(R"({"sub":"admin","exp":)" + std::to_string(now_s + 60) + "}"));
    EXPECT_FALSE(v.verify(token, now));
}

TEST_F(Jwt, UnknownKidRefused) {
    auto v = verifier();
    auto c = v.verify(sign_jwt(rsa, "RS256", "nope", claims(now_s + 60)), now);
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().find("unknown key id"), std::string::npos);
}

TEST_F(Jwt, AlgorithmNoneAndHmacRefused) {
    auto v = verifier();
    const std::string body = base64url_encode(claims(now_s + 60));
    auto none = v.verify(base64url_encode(R"({"alg":"none"})") + "." + body + ".", now);
    ASSERT_FALSE(none);
    EXPECT_NE(none.error().find("unsupported algorithm"), std::string::npos);
    EXPECT_FALSE(v.verify(base64url_encode(R"({"alg":"HS256","kid":"r1"})") + "." + body + ".AAAA",
                          now));
}

TEST_F(Jwt, AlgorithmMustMatchKeyType) {
    auto v = verifier();
    // An EC signature presented as RS256 under the EC key's id.
    auto token = sign_jwt(ec, "ES256", "e1", claims(now_s + 60));
    const std::string header = base64url_encode(R"({"alg":"RS256","kid":"e1"})");
    token.replace(0, token.find('.'), header);
    EXPECT_FALSE(v.verify(token, now));
}

TEST_F(Jwt, MalformedTokensRefusedWithReason) {
    auto v = verifier();
    for (std::string bad : {"", "abc", "a.b", "a.b.c.d", "!!.??.**", "e30.e30.", "bnVsbA.e30.AA"}) {
        auto c = v.verify(bad, now);
        ASSERT_FALSE(c) << bad;
        EXPECT_FALSE(c.error().empty());
    }
}

TEST_F(Jwt, OversizedTokenRefusedWithoutEcho) {
    jwt_settings s;
    s.max_token_bytes = 512;
    auto v = verifier(s);
    auto token = sign_jwt(rsa, "RS256", "r1", claims(now_s + 60, ",\"pad\":\"" +
                                                                     std::string(600, 'x') + "\""));
    auto c = v.verify(token, now);
    ASSERT_FALSE(c);
    EXPECT_NE(c.error().find("exceeds"), std::string::npos);
    EXPECT_EQ(c.error().find("xxxx"), std::string::npos);
}

TEST(JwtKeys, BadKeyMaterialThrows) {
    jwt_key_set keys;
    EXPECT_THROW(keys.add_pem("k", "not a key"), std::runtime_error);
    EXPECT_THROW(keys.add_jwks("[]"), std::runtime_error);
    EXPECT_THROW(keys.add_jwks(R"({"keys":[{"kty":"RSA","kid":"a","n":"!!","e":"AQAB"}]})"),
                 std::runtime_error);
    EXPECT_THROW(keys.add_jwks(R"({"keys":[{"kty":"EC","crv":"P-256","kid":"a","x":"AA","y":"AA"}]})"),
                 std::runtime_error);
    keys.add_jwks(R"({"keys":[{"kty":"oct","k":"AA"},{"kty":"EC","crv":"P-384","x":"AA"}]})");
    EXPECT_TRUE(keys.empty());
}

}  // namespace
}  // namespace sluice::auth
