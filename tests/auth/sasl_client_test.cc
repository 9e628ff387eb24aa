// The client side of SASL (the Kafka proxy's upstream logins): RFC 7677's SCRAM-SHA-256 example
// byte for byte, full exchanges against sluice's own SCRAM and PLAIN servers, a server that
// answers wrongly, and OAUTHBEARER's message byte for byte.
#include <filesystem>

#include <gtest/gtest.h>

#include "auth/credential_store.h"
#include "auth/crypto.h"
#include "auth/sasl/sasl_client.h"
#include "auth/sasl/sasl_server.h"
#include "protocol/core/base64.h"

namespace sluice::auth {
namespace {

using client_outcome = sasl_client_step::outcome;

credential_store sasl_client_test_store() {
    credential_store store(std::filesystem::path("/nonexistent/credentials"));
    store.set("alice", make_user_credentials("alice-secret"));
    return store;
}

TEST(SaslClient, ScramSha256ReplaysRfc7677) {
    auto c = make_sasl_client("SCRAM-SHA-256", "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->start(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    auto s = c->step(
        "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096");
    ASSERT_EQ(s.what, client_outcome::send) << s.reason;
    EXPECT_EQ(s.message,
              "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
              "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
    s = c->step("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
    EXPECT_EQ(s.what, client_outcome::done) << s.reason;
}

TEST(SaslClient, LogsInToTheServerWithEveryMechanism) {
    const auto store = sasl_client_test_store();
    for (const char* mech : {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}) {
        auto c = make_sasl_client(mech, "alice", "alice-secret");
        auto server = make_sasl_server(mech, store);
        ASSERT_NE(c, nullptr);
        ASSERT_NE(server, nullptr);
        std::string message = c->start();
        sasl_step reply;
        for (int i = 0; i < 4; ++i) {
            reply = server->step(message);
            if (reply.what != sasl_step::outcome::challenge) {
                break;
            }
            const auto next = c->step(reply.reply);
            ASSERT_EQ(next.what, client_outcome::send) << mech << ": " << next.reason;
            message = next.message;
        }
        ASSERT_EQ(reply.what, sasl_step::outcome::success) << mech << ": " << reply.reason;
        EXPECT_EQ(reply.user, "alice");
        EXPECT_EQ(c->step(reply.reply).what, client_outcome::done) << mech;
    }
}

TEST(SaslClient, WrongPasswordFailsAtTheServer) {
    const auto store = sasl_client_test_store();
    auto c = make_sasl_client("SCRAM-SHA-512", "alice", "not-it");
    auto server = make_sasl_server("SCRAM-SHA-512", store);
    const auto first = server->step(c->start());
    ASSERT_EQ(first.what, sasl_step::outcome::challenge);
    const auto final_msg = c->step(first.reply);
    ASSERT_EQ(final_msg.what, client_outcome::send);
    EXPECT_EQ(server->step(final_msg.message).what, sasl_step::outcome::failure);
}

TEST(SaslClient, ScramRefusesAWrongServer) {
    // A nonce that does not extend the client's, an error attribute, garbage.
    for (const char* bad : {"r=other,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "e=unknown-user",
                            "garbage", "r=abcX,s=!!!,i=4096", "r=abcX,s=W22Z,i=0"}) {
        auto c = make_sasl_client("SCRAM-SHA-256", "user", "pencil", "abc");
        c->start();
        EXPECT_EQ(c->step(bad).what, client_outcome::failure) << bad;
    }
    // A server signature that does not verify.
    auto c = make_sasl_client("SCRAM-SHA-256", "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
    c->start();
    ASSERT_EQ(c->step("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                      "s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
                  .what,
              client_outcome::send);
    EXPECT_EQ(c->step("v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=").what,
              client_outcome::failure);
}

TEST(SaslClient, OauthbearerSendsTheTokenFramedAsRfc7628Says) {
    auto c = make_sasl_client("OAUTHBEARER", "", "eyJh.eyJz.c2ln");
    ASSERT_NE(c, nullptr);
    // GS2 header "n,," then kvsep (0x01)-framed pairs, ending in two kvseps.
    const std::string expected = std::string("n,,") + '\x01' + "auth=Bearer eyJh.eyJz.c2ln" +
                                 '\x01' + '\x01';
    EXPECT_EQ(c->start(), expected);
    EXPECT_EQ(c->step("").what, client_outcome::done);
    // A non-empty server message is RFC 7628's error status: a failure, quoted (no token).
    auto refused = make_sasl_client("OAUTHBEARER", "", "eyJh.eyJz.c2ln");
    refused->start();
    const auto step = refused->step(R"({"status":"invalid_token"})");
    EXPECT_EQ(step.what, client_outcome::failure);
    EXPECT_NE(step.reason.find("invalid_token"), std::string::npos);
    EXPECT_EQ(step.reason.find("eyJh"), std::string::npos);
}

TEST(SaslClient, UnknownMechanismIsNull) {
    EXPECT_EQ(make_sasl_client("GSSAPI", "a", "b"), nullptr);
}

}  // namespace
}  // namespace sluice::auth
