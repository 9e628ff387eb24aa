// SASL PLAIN (RFC 4616) against salted verifiers.
#include <filesystem>

#include <gtest/gtest.h>

#include "auth/credential_store.h"
#include "auth/sasl/plain.h"
#include "auth/sasl/sasl_server.h"

namespace sluice::auth {
namespace {

using outcome = sasl_step::outcome;
using namespace std::string_literals;

credential_store alice_store() {
    credential_store store(std::filesystem::path("/nonexistent/credentials"));
    store.set("alice", make_user_credentials("s3cret"));
    return store;
}

TEST(Plain, RightPasswordSucceeds) {
    auto store = alice_store();
    plain_server server(store);

    auto s = server.step("\0alice\0s3cret"s);

    ASSERT_EQ(s.what, outcome::success) << s.reason;
    EXPECT_EQ(s.user, "alice");
    EXPECT_TRUE(s.reply.empty());
}

TEST(Plain, AuthorizationIdEqualToUserSucceeds) {
    auto store = alice_store();
    plain_server server(store);

    EXPECT_EQ(server.step("alice\0alice\0s3cret"s).what, outcome::success);
}

TEST(Plain, OtherAuthorizationIdFails) {
    auto store = alice_store();
    plain_server server(store);

    EXPECT_EQ(server.step("bob\0alice\0s3cret"s).what, outcome::failure);
}

TEST(Plain, WrongPasswordAndUnknownUserGiveTheSameAnswer) {
    auto store = alice_store();
    plain_server wrong(store);
    plain_server unknown(store);

    auto a = wrong.step("\0alice\0nope"s);
    auto b = unknown.step("\0mallory\0s3cret"s);

    EXPECT_EQ(a.what, outcome::failure);
    EXPECT_EQ(b.what, outcome::failure);
    EXPECT_EQ(a.client_error, b.client_error);
    EXPECT_NE(a.reason, b.reason);  // the log may tell them apart
}

TEST(Plain, MalformedMessagesFail) {
    auto store = alice_store();
    for (const std::string& m : {""s, "alice"s, "\0alice"s, "\0alice\0"s, "\0\0s3cret"s,
                                 "\0alice\0s3cret\0"s, "\0alice\0s3\0cret"s}) {
        plain_server server(store);
        auto s = server.step(m);
        EXPECT_EQ(s.what, outcome::failure) << "length " << m.size();
        EXPECT_FALSE(s.client_error.empty());
    }
}

TEST(Plain, SecondMessageFails) {
    auto store = alice_store();
    plain_server server(store);
    ASSERT_EQ(server.step("\0alice\0s3cret"s).what, outcome::success);

    EXPECT_EQ(server.step("\0alice\0s3cret"s).what, outcome::failure);
}

TEST(SaslServer, FactoryKnowsKafkasMechanismNames) {
    auto store = alice_store();

    EXPECT_EQ(make_sasl_server("PLAIN", store)->mechanism(), "PLAIN");
    EXPECT_EQ(make_sasl_server("SCRAM-SHA-256", store)->mechanism(), "SCRAM-SHA-256");
    EXPECT_EQ(make_sasl_server("SCRAM-SHA-512", store)->mechanism(), "SCRAM-SHA-512");
    EXPECT_EQ(make_sasl_server("GSSAPI", store), nullptr);
    EXPECT_EQ(make_sasl_server("plain", store), nullptr);
}

}  // namespace
}  // namespace sluice::auth

namespace sluice::auth {
namespace {

TEST(Plain, UserWithOnlyScramCredentialsIsCheckedAgainstThem) {
    credential_store store(std::filesystem::path("/nonexistent/credentials"));
    user_credentials u;
    u.scram_sha_512 = make_scram_credential(hash_algorithm::sha512, "new-pw", 4096);
    store.set("alice", u);

    plain_server right(store);
    plain_server wrong(store);

    EXPECT_EQ(right.step(std::string("\0alice\0new-pw", 13)).what, sasl_step::outcome::success);
    EXPECT_EQ(wrong.step(std::string("\0alice\0old-pw", 13)).what, sasl_step::outcome::failure);
}

TEST(Credentials, CredentialFromSaltedPasswordMatchesOneFromThePassword) {
    const std::string salt = "salt-salt-salt";
    const std::string salted = pbkdf2(hash_algorithm::sha256, "pw", salt, 4096);

    EXPECT_EQ(scram_credential_from_salted(hash_algorithm::sha256, salt, salted, 4096),
              make_scram_credential(hash_algorithm::sha256, "pw", 4096, salt));
    EXPECT_TRUE(verify_scram_password(hash_algorithm::sha256,
                                      make_scram_credential(hash_algorithm::sha256, "pw", 4096),
                                      "pw"));
}

}  // namespace
}  // namespace sluice::auth
