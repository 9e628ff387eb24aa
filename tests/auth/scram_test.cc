// SCRAM-SHA-256/512 server exchanges: RFC 7677's example byte for byte, a full exchange with a
// client computed here (RFC 5802 section 3), and every way a client message can be wrong.
#include <filesystem>

#include <gtest/gtest.h>

#include "auth/credential_store.h"
#include "auth/crypto.h"
#include "auth/sasl/scram.h"
#include "protocol/core/base64.h"

namespace sluice::auth {
namespace {

using outcome = sasl_step::outcome;

// RFC 7677 section 3.
constexpr std::string_view rfc_salt_b64 = "W22ZaJ0SNY7soEsUEjb6gQ==";
constexpr std::string_view rfc_server_nonce = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
constexpr std::string_view rfc_client_first = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
constexpr std::string_view rfc_server_first =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
constexpr std::string_view rfc_client_final =
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
constexpr std::string_view rfc_server_final = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

credential_store rfc_store() {
    credential_store store(std::filesystem::path("/nonexistent/credentials"));
    user_credentials u;
    u.scram_sha_256 = make_scram_credential(hash_algorithm::sha256, "pencil", 4096,
                                            *protocol::base64_decode(rfc_salt_b64));
    store.set("user", u);
    return store;
}

/// The client side of RFC 5802: the client-final message for `server_first`.
std::string client_final_for(hash_algorithm h, std::string_view password,
                             std::string_view client_first_bare, std::string_view server_first,
                             std::string_view nonce_prefix = {}) {
    std::string nonce, salt;
    int iterations = 0;
    std::size_t start = 0;
    while (start < server_first.size()) {
        auto end = server_first.find(',', start);
        if (end == std::string_view::npos) {
            end = server_first.size();
        }
        auto attr = server_first.substr(start, end - start);
        if (attr.starts_with("r=")) {
            nonce = attr.substr(2);
        } else if (attr.starts_with("s=")) {
            salt = *protocol::base64_decode(attr.substr(2));
        } else if (attr.starts_with("i=")) {
            iterations = std::stoi(std::string(attr.substr(2)));
        }
        start = end + 1;
    }
    const std::string salted = pbkdf2(h, password, salt, iterations);
    const std::string client_key = hmac(h, salted, "Client Key");
    const std::string without_proof = "c=biws,r=" + std::string(nonce_prefix) + nonce;
    const std::string auth_message = std::string(client_first_bare) + "," +
                                     std::string(server_first) + "," + without_proof;
    const std::string signature = hmac(h, hash(h, client_key), auth_message);
    std::string proof = client_key;
    for (std::size_t i = 0; i < proof.size(); ++i) {
        proof[i] = static_cast<char>(proof[i] ^ signature[i]);
    }
    return without_proof + ",p=" + protocol::base64_encode(proof);
}

TEST(Scram, Rfc7677ExampleExchangeMatchesByteForByte) {
    auto store = rfc_store();
    scram_server server(hash_algorithm::sha256, store, std::string(rfc_server_nonce));

    auto first = server.step(rfc_client_first);
    ASSERT_EQ(first.what, outcome::challenge) << first.reason;
    EXPECT_EQ(first.reply, rfc_server_first);
    auto final_step = server.step(rfc_client_final);

    ASSERT_EQ(final_step.what, outcome::success) << final_step.reason;
    EXPECT_EQ(final_step.reply, rfc_server_final);
    EXPECT_EQ(final_step.user, "user");
}

TEST(Scram, Sha512ExchangeWithComputedClientSucceeds) {
    credential_store store(std::filesystem::path("/nonexistent/credentials"));
    store.set("alice", make_user_credentials("s3cret"));
    scram_server server(hash_algorithm::sha512, store);
    const std::string bare = "n=alice,r=fyko+d2lbbFgONRv9qkxdawL";

    auto first = server.step("n,," + bare);
    ASSERT_EQ(first.what, outcome::challenge) << first.reason;
    EXPECT_TRUE(first.reply.starts_with("r=fyko+d2lbbFgONRv9qkxdawL"));
    auto last = server.step(client_final_for(hash_algorithm::sha512, "s3cret", bare, first.reply));

    ASSERT_EQ(last.what, outcome::success) << last.reason;
    EXPECT_TRUE(last.reply.starts_with("v="));
    EXPECT_EQ(server.mechanism(), "SCRAM-SHA-512");
}

TEST(Scram, WrongPasswordFailsAtTheProof) {
    auto store = rfc_store();
    scram_server server(hash_algorithm::sha256, store);
    const std::string bare = "n=user,r=abcdefgh";
    auto first = server.step("n,," + bare);
    ASSERT_EQ(first.what, outcome::challenge);

    auto last = server.step(client_final_for(hash_algorithm::sha256, "pencil2", bare, first.reply));

    EXPECT_EQ(last.what, outcome::failure);
    EXPECT_NE(last.client_error.find("invalid credentials"), std::string::npos);
}

TEST(Scram, UnknownUserLooksLikeWrongPassword) {
    auto store = rfc_store();
    scram_server known(hash_algorithm::sha256, store);
    scram_server unknown(hash_algorithm::sha256, store);
    const std::string bare_known = "n=user,r=abcdefgh";
    const std::string bare_unknown = "n=nobody,r=abcdefgh";

    auto known_first = known.step("n,," + bare_known);
    auto unknown_first = unknown.step("n,," + bare_unknown);
    ASSERT_EQ(unknown_first.what, outcome::challenge);
    EXPECT_NE(unknown_first.reply.find(",s="), std::string::npos);
    EXPECT_NE(unknown_first.reply.find(",i=4096"), std::string::npos);
    auto known_last =
        known.step(client_final_for(hash_algorithm::sha256, "wrong", bare_known,
                                    known_first.reply));
    auto unknown_last = unknown.step(
        client_final_for(hash_algorithm::sha256, "wrong", bare_unknown, unknown_first.reply));

    EXPECT_EQ(unknown_last.what, outcome::failure);
    EXPECT_EQ(unknown_last.client_error, known_last.client_error);
}

TEST(Scram, DecoySaltIsStablePerUnknownUser) {
    auto store = rfc_store();
    scram_server a(hash_algorithm::sha256, store, "N");
    scram_server b(hash_algorithm::sha256, store, "N");

    EXPECT_EQ(a.step("n,,n=ghost,r=x").reply, b.step("n,,n=ghost,r=x").reply);
}

TEST(Scram, NonceRepeatingTheClientPartIsAccepted) {
    // compat: librdkafka 2.0.2 sends r=CNONCE+CNONCE+SNONCE; Kafka accepts a matching suffix.
    auto store = rfc_store();
    scram_server server(hash_algorithm::sha256, store);
    const std::string bare = "n=user,r=abcdefgh";
    auto first = server.step("n,," + bare);
    ASSERT_EQ(first.what, outcome::challenge);

    auto last = server.step(
        client_final_for(hash_algorithm::sha256, "pencil", bare, first.reply, "abcdefgh"));

    EXPECT_EQ(last.what, outcome::success) << last.reason;
}

TEST(Scram, NonceWithoutTheServerPartFails) {
    auto store = rfc_store();
    scram_server server(hash_algorithm::sha256, store, std::string(rfc_server_nonce));
    ASSERT_EQ(server.step(rfc_client_first).what, outcome::challenge);

    auto last = server.step(
        "c=biws,r=rOprNGfwEbeRWgbNEkqO,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");

    EXPECT_EQ(last.what, outcome::failure);
}

TEST(Scram, WrongNonceFails) {
    auto store = rfc_store();
    scram_server server(hash_algorithm::sha256, store, std::string(rfc_server_nonce));
    ASSERT_EQ(server.step(rfc_client_first).what, outcome::challenge);

    auto last = server.step(
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k1,"
        "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");

    EXPECT_EQ(last.what, outcome::failure);
    EXPECT_NE(last.client_error.find("nonce"), std::string::npos);
}

TEST(Scram, WrongProofFails) {
    auto store = rfc_store();
    scram_server server(hash_algorithm::sha256, store, std::string(rfc_server_nonce));
    ASSERT_EQ(server.step(rfc_client_first).what, outcome::challenge);

    auto last = server.step(
        "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        "p=eHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");

    EXPECT_EQ(last.what, outcome::failure);
    EXPECT_NE(last.client_error.find("invalid credentials"), std::string::npos);
}

TEST(Scram, ChannelBindingMustRepeatTheGs2Header) {
    auto store = rfc_store();
    scram_server server(hash_algorithm::sha256, store, std::string(rfc_server_nonce));
    ASSERT_EQ(server.step(rfc_client_first).what, outcome::challenge);

    auto last = server.step(
        "c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");

    EXPECT_EQ(last.what, outcome::failure);
}

TEST(Scram, MalformedClientFirstMessagesFailCleanly) {
    auto store = rfc_store();
    const std::string_view bad[] = {
        "",
        "n",
        "n,",
        "n,,",
        "n,,n=user",
        "n,,r=abc,n=user",
        "n,,n=user,r=",
        "n,,n=us=er,r=abc",
        "n,,m=ext,n=user,r=abc",
        "p=tls-unique,,n=user,r=abc",
        "y,,n=user,r=abc",
        "x,,n=user,r=abc",
        "n,a=other,n=user,r=abc",
        "n,,n=user,r=abc,tokenauth=true",
        "n,,n=user,r=ab\x01",
        std::string_view("n,,n=u\0ser,r=abc", 16),
        "\xff\xfe\x00garbage",
    };
    for (auto message : bad) {
        scram_server server(hash_algorithm::sha256, store);
        auto s = server.step(message);
        EXPECT_EQ(s.what, outcome::failure) << "message: " << message;
        EXPECT_FALSE(s.client_error.empty());
        EXPECT_FALSE(s.client_error.find("pencil") != std::string::npos);
    }
}

TEST(Scram, TruncatedClientFinalMessagesFailCleanly) {
    auto store = rfc_store();
    const std::string full(rfc_client_final);
    for (std::size_t len = 0; len < full.size(); ++len) {
        scram_server server(hash_algorithm::sha256, store, std::string(rfc_server_nonce));
        ASSERT_EQ(server.step(rfc_client_first).what, outcome::challenge);

        auto s = server.step(std::string_view(full).substr(0, len));

        EXPECT_EQ(s.what, outcome::failure) << "prefix length " << len;
    }
}

TEST(Scram, StepAfterTheEndFails) {
    auto store = rfc_store();
    scram_server server(hash_algorithm::sha256, store, std::string(rfc_server_nonce));
    server.step(rfc_client_first);
    ASSERT_EQ(server.step(rfc_client_final).what, outcome::success);

    EXPECT_EQ(server.step(rfc_client_final).what, outcome::failure);
    EXPECT_EQ(server.step(rfc_client_first).what, outcome::failure);
}

TEST(Scram, EscapedUserNamesAreDecoded) {
    EXPECT_EQ(decode_sasl_name("a=2Cb=3Dc"), "a,b=c");
    EXPECT_FALSE(decode_sasl_name("a=2"));
    EXPECT_FALSE(decode_sasl_name("a=41"));
    EXPECT_FALSE(decode_sasl_name("a,b"));
}

TEST(Scram, AuthorizationIdEqualToUserIsAccepted) {
    auto store = rfc_store();
    scram_server server(hash_algorithm::sha256, store);

    EXPECT_EQ(server.step("n,a=user,n=user,r=abc").what, outcome::challenge);
}

}  // namespace
}  // namespace sluice::auth
