#include "auth/session_token.h"

#include <gtest/gtest.h>

namespace sluice::auth {
namespace {

using namespace std::chrono_literals;

const session_tokens::clock::time_point token_t0{std::chrono::seconds(1'800'000'000)};

TEST(SessionTokens, AValidTokenGivesItsPrincipal) {
    session_tokens tokens(1h);
    const auto token = tokens.issue("User:alice", 7, token_t0);
    EXPECT_TRUE(session_tokens::looks_like(token));
    EXPECT_EQ(tokens.verify(token, 7, token_t0 + 59min), "User:alice");
}

TEST(SessionTokens, ExpiresAfterItsLifetime) {
    session_tokens tokens(1h);
    const auto token = tokens.issue("User:alice", 1, token_t0);
    std::string why;
    EXPECT_FALSE(tokens.verify(token, 1, token_t0 + 1h, &why));
    EXPECT_EQ(why, "session expired");
}

TEST(SessionTokens, AChangeOfWhatItIsBoundToEndsTheSession) {
    session_tokens tokens;
    const auto token = tokens.issue("User:alice", 3, token_t0);
    std::string why;
    EXPECT_FALSE(tokens.verify(token, 4, token_t0, &why));
    EXPECT_NE(why.find("its user changed"), std::string::npos);
}

TEST(SessionTokens, TheClaimedPrincipalIsReadWithoutTrustingIt) {
    session_tokens tokens;
    EXPECT_EQ(session_tokens::claimed_principal(tokens.issue("User:alice", 3, token_t0)),
              "User:alice");
    // Readable from any token of the right shape, signed or not: only a lookup key.
    EXPECT_EQ(session_tokens::claimed_principal("sluice-session.VXNlcjpib2I.1.x"), "User:bob");
    EXPECT_FALSE(session_tokens::claimed_principal("sluice-session."));
    EXPECT_FALSE(session_tokens::claimed_principal("Bearer abc"));
    EXPECT_FALSE(session_tokens::claimed_principal("sluice-session." + std::string(5000, 'A')));
}

TEST(SessionTokens, AnotherProcessesTokenIsRefused) {
    session_tokens one;
    session_tokens other;
    EXPECT_FALSE(other.verify(one.issue("User:alice", 0, token_t0), 0, token_t0));
}

TEST(SessionTokens, AnEditedPrincipalOrExpiryBreaksTheSignature) {
    session_tokens tokens(1h);
    const auto token = tokens.issue("User:alice", 0, token_t0);
    const auto first = token.find('.', session_tokens::prefix.size());
    const auto second = token.find('.', first + 1);
    // User:admin instead of User:alice, the signature kept.
    std::string forged = std::string(session_tokens::prefix) + "VXNlcjphZG1pbg" +
                         token.substr(first);
    EXPECT_FALSE(tokens.verify(forged, 0, token_t0));
    std::string later = token.substr(0, first + 1) + "99999999999" + token.substr(second);
    EXPECT_FALSE(tokens.verify(later, 0, token_t0));
}

TEST(SessionTokens, MalformedTokensAreRefusedWithoutEchoingThem) {
    session_tokens tokens;
    for (std::string_view bad :
         {"", "sluice-session.", "sluice-session.a", "sluice-session.a.b", "sluice-session.a.1.",
          "sluice-session.a.1.x.y", "sluice-session.!!.1.x", "sluice-session..99999999999.x",
          "sluice-session.a.-1x.x", "eyJhbGciOi.payload.sig"}) {
        std::string why;
        EXPECT_FALSE(tokens.verify(bad, 0, token_t0, &why)) << bad;
        EXPECT_FALSE(why.empty()) << bad;
        if (bad.size() > 16) {
            EXPECT_EQ(why.find(bad), std::string::npos) << bad;
        }
    }
}

TEST(SessionTokens, AnOversizedPrincipalIsRefusedBeforeAnyHashing) {
    session_tokens tokens;
    const std::string token = std::string(session_tokens::prefix) + std::string(100'000, 'A') +
                              ".99999999999.x";
    std::string why;
    EXPECT_FALSE(tokens.verify(token, 0, token_t0, &why));
    EXPECT_EQ(why, "malformed session token");
}

}  // namespace
}  // namespace sluice::auth
