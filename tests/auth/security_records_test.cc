#include "auth/security_records.h"

#include <gtest/gtest.h>

namespace sluice::auth {
namespace {

security_snapshot sample_snapshot() {
    security_snapshot s;
    s.users["alice"] = make_user_credentials("alice-secret");
    s.users["bob"] = make_user_credentials("bob-secret", 8192);
    s.acls.insert(acl_binding{resource_type::topic, "orders with space", pattern_type::literal,
                              "User:alice", "*", acl_operation::write, acl_permission::allow});
    s.acls.insert(acl_binding{resource_type::group, "g-", pattern_type::prefixed, "User:bob",
                              "10.0.0.1", acl_operation::read, acl_permission::deny});
    quota_values v;
    v[static_cast<std::size_t>(quota_kind::producer_byte_rate)] = 1048576;
    v[static_cast<std::size_t>(quota_kind::request_percentage)] = 12.5;
    s.quotas[quota_entity{entity_part::named("alice"), entity_part::default_entity()}] = v;
    quota_values w;
    w[static_cast<std::size_t>(quota_kind::consumer_byte_rate)] = 2048;
    s.quotas[quota_entity{entity_part{}, entity_part::named("client 1")}] = w;
    s.aws_keys["alice"] = aws_access_key{"AKIAALICE0000000", "alice", "s3cr3t/+="};
    return s;
}

security_snapshot replay(const std::vector<security_record>& records) {
    security_snapshot s;
    for (const auto& r : records) {
        std::optional<std::string_view> value;
        if (r.value) {
            value = *r.value;
        }
        const auto got = apply_security_record(s, r.key, value);
        EXPECT_EQ(got.what, applied_record::outcome::applied) << r.key << ": " << got.detail;
    }
    return s;
}

TEST(SecurityRecords, RoundTripThroughTheDiffFromNothing) {
    const security_snapshot s = sample_snapshot();
    const auto records = security_diff({}, s);
    EXPECT_EQ(records.size(), 7u);
    for (const auto& r : records) {
        EXPECT_TRUE(r.value.has_value()) << r.key;
    }
    EXPECT_EQ(replay(records), s);
}

TEST(SecurityRecords, KeysNameTheKindAndTheEntity) {
    const security_snapshot s = sample_snapshot();
    EXPECT_EQ(user_record("alice", &s.users.at("alice")).key, "user:alice");
    EXPECT_EQ(aws_key_record("alice", nullptr).key, "aws-key:alice");
    EXPECT_EQ(acl_record(*s.acls.begin(), true).key,
              "acl:TOPIC LITERAL ALLOW WRITE User:alice * orders%20with%20space");
    EXPECT_EQ(quota_record(s.quotas.begin()->first, nullptr).key.substr(0, 6), "quota:");
}

TEST(SecurityRecords, NoPasswordInAUserRecord) {
    const auto creds = make_user_credentials("correct horse battery staple");
    const auto r = user_record("carol", &creds);
    ASSERT_TRUE(r.value);
    EXPECT_EQ(r.value->find("correct horse"), std::string::npos);
    EXPECT_NE(r.value->find("scram-sha-512="), std::string::npos);
}

TEST(SecurityRecords, TombstonesDeleteAndTheDiffWritesThem) {
    const security_snapshot before = sample_snapshot();
    security_snapshot after = before;
    after.users.erase("bob");
    after.acls.erase(after.acls.begin());
    after.quotas.erase(after.quotas.begin());
    after.aws_keys.erase("alice");
    after.users["alice"] = make_user_credentials("new-password");
    const auto records = security_diff(before, after);
    ASSERT_EQ(records.size(), 5u);
    std::size_t tombstones = 0;
    for (const auto& r : records) {
        tombstones += r.value ? 0 : 1;
    }
    EXPECT_EQ(tombstones, 4u);
    security_snapshot s = before;
    for (const auto& r : records) {
        std::optional<std::string_view> value;
        if (r.value) {
            value = *r.value;
        }
        EXPECT_EQ(apply_security_record(s, r.key, value).what, applied_record::outcome::applied);
    }
    EXPECT_EQ(s, after);
    EXPECT_TRUE(security_diff(after, after).empty());
}

TEST(SecurityRecords, ATombstoneOfSomethingAbsentChangesNothing) {
    security_snapshot s = sample_snapshot();
    const security_snapshot copy = s;
    EXPECT_EQ(apply_security_record(s, "user:nobody", std::nullopt).what,
              applied_record::outcome::applied);
    EXPECT_EQ(s, copy);
}

TEST(SecurityRecords, UnknownKindsAreSkippedAndNamed) {
    security_snapshot s;
    const auto got = apply_security_record(s, "role:admins", std::string_view("x"));
    EXPECT_EQ(got.what, applied_record::outcome::unknown_kind);
    EXPECT_EQ(got.detail, "role");
    EXPECT_FALSE(got.kind);
    EXPECT_EQ(apply_security_record(s, "no-colon", std::nullopt).what,
              applied_record::outcome::unknown_kind);
    EXPECT_EQ(apply_security_record(s, std::string_view("\x01\x02:x", 4), std::nullopt).detail,
              "??");
    EXPECT_EQ(s, security_snapshot{});
}

TEST(SecurityRecords, MalformedRecordsOfKnownKindsAreInvalidNotApplied) {
    security_snapshot s;
    const std::vector<std::pair<std::string, std::optional<std::string>>> bad = {
        {"user:alice", "scram-sha-256=not:base64"},
        {"user:alice", ""},
        {"user:bad name", "plain=4096:AAAA:AAAA"},
        {"user:alice", "rot13=abc"},
        {"acl:TOPIC LITERAL ALLOW", "present"},
        {"acl:TOPIC LITERAL ALLOW WRITE User:a * t", "maybe"},
        {"acl:TOPIC LITERAL ALLOW FLY User:a * t", "present"},
        {"acl:TOPIC LITERAL ALLOW WRITE nobody * t", "present"},
        {"quota:- -", "producer_byte_rate=10"},
        {"quota:=a -", "producer_byte_rate=ten"},
        {"quota:=a -", "speed=10"},
        {"quota:=a -", "producer_byte_rate=-5"},
        {"quota:=a -", ""},
        {"aws-key:alice", "SHORT c2VjcmV0"},
        {"aws-key:alice", "AKIAALICE0000000 !!!"},
        {"aws-key:alice", "AKIAALICE0000000"},
    };
    for (const auto& [key, value] : bad) {
        std::optional<std::string_view> v;
        if (value) {
            v = *value;
        }
        const auto got = apply_security_record(s, key, v);
        EXPECT_EQ(got.what, applied_record::outcome::invalid) << key << " = " << value.value_or("");
        EXPECT_TRUE(got.kind.has_value()) << key;
        EXPECT_FALSE(got.detail.empty()) << key;
    }
    EXPECT_EQ(s, security_snapshot{});
}

TEST(SecurityRecords, AnAccessKeyIdHeldByAnotherUserIsRefused) {
    security_snapshot s = sample_snapshot();
    const auto got =
        apply_security_record(s, "aws-key:bob", std::string_view("AKIAALICE0000000 c2VjcmV0"));
    EXPECT_EQ(got.what, applied_record::outcome::invalid);
    EXPECT_FALSE(s.aws_keys.contains("bob"));
}

TEST(SecurityRecords, LaterRecordsOfAKeyReplaceEarlierOnes) {
    security_snapshot s;
    const auto first = make_user_credentials("one");
    const auto second = make_user_credentials("two");
    for (const auto& r : {user_record("dave", &first), user_record("dave", &second)}) {
        apply_security_record(s, r.key, std::string_view(*r.value));
    }
    EXPECT_EQ(s.users.at("dave"), second);
}

}  // namespace
}  // namespace sluice::auth
