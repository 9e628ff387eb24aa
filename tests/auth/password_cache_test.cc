// The cache of checked passwords (HTTP Basic), on a manual clock.
#include <gtest/gtest.h>

#include "auth/credential_store.h"
#include "auth/password_cache.h"

namespace sluice::auth {
namespace {

using namespace std::chrono_literals;
using clock_type = password_cache::clock;

const auto t0 = clock_type::time_point{} + 1h;

TEST(PasswordCache, RemembersACheckedPasswordUntilItsTimeToLive) {
    password_cache cache(password_cache::options{10s, 16});
    EXPECT_FALSE(cache.contains("alice", "secret", 1, t0));
    cache.insert("alice", "secret", 1, t0);
    EXPECT_TRUE(cache.contains("alice", "secret", 1, t0 + 9s));
    EXPECT_FALSE(cache.contains("alice", "secret", 1, t0 + 10s));
}

TEST(PasswordCache, AnotherPasswordOrUserIsAMiss) {
    password_cache cache;
    cache.insert("alice", "secret", 1, t0);
    EXPECT_FALSE(cache.contains("alice", "Secret", 1, t0));
    EXPECT_FALSE(cache.contains("alice", "secre", 1, t0));
    EXPECT_FALSE(cache.contains("bob", "secret", 1, t0));
    // The pair is kept apart by the NUL: "ali" + "ce\0secret" is not "alice" + "secret".
    EXPECT_FALSE(cache.contains("alic", "esecret", 1, t0));
}

TEST(PasswordCache, AChangeOfUsersMakesEveryEntryStale) {
    password_cache cache;
    cache.insert("alice", "secret", 4, t0);
    EXPECT_FALSE(cache.contains("alice", "secret", 5, t0));
}

TEST(PasswordCache, StaysWithinItsSize) {
    password_cache cache(password_cache::options{10s, 4});
    for (int i = 0; i < 4; ++i) {
        cache.insert("user" + std::to_string(i), "pw", 1, t0);
    }
    EXPECT_EQ(cache.size(), 4u);
    // Full of live entries: making room drops them all.
    cache.insert("user4", "pw", 1, t0 + 1s);
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_TRUE(cache.contains("user4", "pw", 1, t0 + 1s));
    for (int i = 5; i < 8; ++i) {
        cache.insert("user" + std::to_string(i), "pw", 1, t0 + 1s);
    }
    // Full again, with entries of an older generation: only those go.
    cache.insert("user8", "pw", 2, t0 + 2s);
    EXPECT_EQ(cache.size(), 1u);
    cache.insert("user9", "pw", 2, t0 + 12s);
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_FALSE(cache.contains("user8", "pw", 2, t0 + 12s));
    EXPECT_TRUE(cache.contains("user9", "pw", 2, t0 + 12s));
}

TEST(PasswordCache, TheCredentialStoreGenerationMovesWithEveryChange) {
    credential_store users("unused");
    const auto g0 = users.generation();
    users.set("alice", make_user_credentials("one"));
    const auto g1 = users.generation();
    EXPECT_NE(g1, g0);
    users.replace("alice", make_user_credentials("two"));
    const auto g2 = users.generation();
    EXPECT_NE(g2, g1);
    EXPECT_FALSE(users.erase("nobody"));
    EXPECT_EQ(users.generation(), g2);
    EXPECT_TRUE(users.erase("alice"));
    EXPECT_NE(users.generation(), g2);
}

}  // namespace
}  // namespace sluice::auth
