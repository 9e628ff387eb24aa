// SASL OAUTHBEARER (RFC 7628) client-first messages around signed JWTs.
#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>

#include "auth/credential_store.h"
#include "auth/sasl/oauthbearer.h"
#include "jwt_test_support.h"

namespace sluice::auth {
namespace {

using outcome = sasl_step::outcome;

struct OauthBearer : ::testing::Test {
    test::pkey_ptr key = test::make_ec_key();
    jwt_verifier verifier = [this] {
        jwt_key_set keys;
        keys.add_jwks(R"({"keys":[)" + test::jwk_json(key, "k1") + "]}");
        return jwt_verifier(std::move(keys), {});
    }();

    std::string token(std::int64_t exp_in_s = 300, const std::string& sub = "alice") {
        const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
        return test::sign_jwt(key, "ES256", "k1",
                              R"({"sub":")" + sub + R"(","exp":)" + std::to_string(now + exp_in_s) +
                                  "}");
    }
    static std::string message(const std::string& token, const std::string& gs2 = "n,,") {
        return gs2 + "\x01" + "auth=Bearer " + token + "\x01\x01";
    }
};

TEST_F(OauthBearer, ValidTokenAuthenticatesItsSubject) {
    oauthbearer_server s(&verifier);
    const auto t = token();
    auto step = s.step(message(t));
    ASSERT_EQ(step.what, outcome::success) << step.reason;
    EXPECT_EQ(step.user, "alice");
    EXPECT_GT(step.expires_at_s, 0);
    EXPECT_EQ(s.step(message(t)).what, outcome::failure);  // one message per exchange
}

TEST_F(OauthBearer, ExtensionsAndMatchingAuthzidAccepted) {
    oauthbearer_server s(&verifier);
    auto step = s.step("n,a=alice,\x01host=h\x01port=9\x01" "auth=Bearer " + token() +
                       "\x01traceId=1\x01\x01");
    EXPECT_EQ(step.what, outcome::success) << step.reason;
}

TEST_F(OauthBearer, AuthzidOtherThanSubjectRefused) {
    oauthbearer_server s(&verifier);
    EXPECT_EQ(s.step(message(token(), "n,a=bob,")).what, outcome::failure);
}

TEST_F(OauthBearer, ExpiredTokenRefusedWithReasonButNoToken) {
    oauthbearer_server s(&verifier);
    const auto t = token(-3600);
    auto step = s.step(message(t));
    ASSERT_EQ(step.what, outcome::failure);
    EXPECT_NE(step.client_error.find("expired"), std::string::npos);
    EXPECT_EQ(step.client_error.find(t.substr(0, 20)), std::string::npos);
    EXPECT_EQ(step.reason.find(t.substr(0, 20)), std::string::npos);
}

TEST_F(OauthBearer, MalformedMessagesRefused) {
    for (std::string bad : {std::string(), std::string("n,,"), std::string("x,,\x01\x01"),
                            std::string("n,,\x01" "auth=Bearer\x01\x01"),
                            std::string("n,,\x01" "auth=Basic abc\x01\x01"),
                            std::string("n,,\x01" "host=x\x01\x01"),
                            "n,,\x01" "auth=Bearer " + token() + "\x01",
                            std::string("n,,\x01=x\x01\x01")}) {
        oauthbearer_server s(&verifier);
        auto step = s.step(bad);
        EXPECT_EQ(step.what, outcome::failure);
        EXPECT_FALSE(step.client_error.empty());
    }
}

TEST_F(OauthBearer, NoVerifierRefusesEveryToken) {
    oauthbearer_server s(nullptr);
    EXPECT_EQ(s.step(message(token())).what, outcome::failure);
    credential_store users(std::filesystem::path("/nonexistent/credentials"));
    EXPECT_EQ(make_sasl_server("OAUTHBEARER", users, &verifier)->mechanism(), "OAUTHBEARER");
}

}  // namespace
}  // namespace sluice::auth
