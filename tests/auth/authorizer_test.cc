// The authorizer: Kafka's decision (deny wins, implications, wildcards, prefixes, super users,
// allow-if-no-acl), the filters of DescribeAcls and DeleteAcls, and the file round trip.
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <gtest/gtest.h>

#include "auth/authorizer.h"

namespace sluice::auth {
namespace {

namespace fs = std::filesystem;
using op = acl_operation;
using rt = resource_type;

acl_binding allow(rt type, std::string name, std::string principal, op o,
                  pattern_type pattern = pattern_type::literal, std::string host = "*") {
    return acl_binding{type,  std::move(name), pattern, std::move(principal), std::move(host),
                       o,     acl_permission::allow};
}

acl_binding deny(rt type, std::string name, std::string principal, op o,
                 pattern_type pattern = pattern_type::literal, std::string host = "*") {
    auto b = allow(type, std::move(name), std::move(principal), o, pattern, std::move(host));
    b.permission = acl_permission::deny;
    return b;
}

class Authorizer : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/sluice-acl-test-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        file_ = authorizer::path_in(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    authorizer make() {
        authorizer_settings s;
        s.enabled = true;
        return authorizer(std::move(s), file_);
    }
    authorizer make(authorizer_settings s) { return authorizer(std::move(s), file_); }
    void add(authorizer& a, const std::vector<acl_binding>& bs) {
        for (const auto& r : a.create_acls(bs)) {
            ASSERT_FALSE(r.has_value()) << *r;
        }
    }
    void write(const std::string& text) {
        std::ofstream out(file_, std::ios::binary);
        out << text;
    }

    fs::path dir_;
    fs::path file_;
};

TEST_F(Authorizer, DisabledAllowsEverything) {
    auto a = make({.enabled = false});
    add(a, {deny(rt::topic, "a", "User:alice", op::all)});
    EXPECT_FALSE(a.enabled());
    EXPECT_TRUE(a.allowed("User:alice", "1.2.3.4", op::write, rt::topic, "a"));
    EXPECT_TRUE(a.allowed_any("User:alice", "1.2.3.4", op::write, rt::topic));
}

TEST_F(Authorizer, LiteralMatchAndNoAclFound) {
    auto a = make();
    add(a, {allow(rt::topic, "a", "User:alice", op::write)});
    EXPECT_TRUE(a.allowed("User:alice", "h", op::write, rt::topic, "a"));
    EXPECT_FALSE(a.allowed("User:alice", "h", op::read, rt::topic, "a"));
    EXPECT_FALSE(a.allowed("User:bob", "h", op::write, rt::topic, "a"));
    // No ACL on topic b: allow.everyone.if.no.acl.found decides (false by default).
    EXPECT_FALSE(a.allowed("User:alice", "h", op::write, rt::topic, "b"));
    EXPECT_FALSE(a.allowed("User:alice", "h", op::read, rt::group, "g"));

    auto open = authorizer({.enabled = true, .allow_everyone_if_no_acl_found = true}, file_);
    EXPECT_TRUE(open.allowed("User:bob", "h", op::write, rt::topic, "b"));
    EXPECT_TRUE(open.allowed("User:bob", "h", op::read, rt::group, "g"));
    // An ACL exists on a, for alice only: bob is refused even so.
    EXPECT_FALSE(open.allowed("User:bob", "h", op::write, rt::topic, "a"));
}

TEST_F(Authorizer, DenyWinsOverAllow) {
    auto a = make();
    add(a, {allow(rt::topic, "a", "User:*", op::all),
            deny(rt::topic, "a", "User:alice", op::write)});
    EXPECT_FALSE(a.allowed("User:alice", "h", op::write, rt::topic, "a"));
    EXPECT_TRUE(a.allowed("User:alice", "h", op::read, rt::topic, "a"));
    EXPECT_TRUE(a.allowed("User:bob", "h", op::write, rt::topic, "a"));
    // A deny of ALL denies every operation, DESCRIBE included.
    add(a, {deny(rt::topic, "*", "User:carol", op::all)});
    EXPECT_FALSE(a.allowed("User:carol", "h", op::describe, rt::topic, "a"));
}

TEST_F(Authorizer, Implications) {
    auto a = make();
    add(a, {allow(rt::topic, "r", "User:u", op::read), allow(rt::topic, "w", "User:u", op::write),
            allow(rt::topic, "d", "User:u", op::remove), allow(rt::topic, "al", "User:u", op::alter),
            allow(rt::topic, "ac", "User:u", op::alter_configs),
            allow(rt::topic, "all", "User:u", op::all),
            allow(rt::topic, "cr", "User:u", op::create)});
    for (const char* t : {"r", "w", "d", "al", "all"}) {
        EXPECT_TRUE(a.allowed("User:u", "h", op::describe, rt::topic, t)) << t;
    }
    EXPECT_FALSE(a.allowed("User:u", "h", op::describe, rt::topic, "cr"));
    EXPECT_FALSE(a.allowed("User:u", "h", op::describe, rt::topic, "ac"));
    EXPECT_TRUE(a.allowed("User:u", "h", op::describe_configs, rt::topic, "ac"));
    EXPECT_FALSE(a.allowed("User:u", "h", op::describe_configs, rt::topic, "r"));
    EXPECT_FALSE(a.allowed("User:u", "h", op::write, rt::topic, "r"));
    EXPECT_TRUE(a.allowed("User:u", "h", op::remove, rt::topic, "all"));
    // A DENY READ does not deny DESCRIBE (Kafka: implications widen allows only).
    add(a, {allow(rt::topic, "x", "User:u", op::describe), deny(rt::topic, "x", "User:u", op::read)});
    EXPECT_TRUE(a.allowed("User:u", "h", op::describe, rt::topic, "x"));
    EXPECT_FALSE(a.allowed("User:u", "h", op::read, rt::topic, "x"));
}

TEST_F(Authorizer, Wildcards) {
    auto a = make();
    add(a, {allow(rt::topic, "*", "User:alice", op::read),
            allow(rt::group, "g", "User:*", op::read),
            allow(rt::topic, "h", "User:bob", op::write, pattern_type::literal, "10.0.0.1")});
    EXPECT_TRUE(a.allowed("User:alice", "h", op::read, rt::topic, "anything"));
    EXPECT_TRUE(a.allowed("User:whoever", "h", op::read, rt::group, "g"));
    EXPECT_TRUE(a.allowed("User:bob", "10.0.0.1", op::write, rt::topic, "h"));
    EXPECT_FALSE(a.allowed("User:bob", "10.0.0.2", op::write, rt::topic, "h"));
    // The "*" literal is only a wildcard as an ACL, not as a principal "User:*" asking.
    EXPECT_FALSE(a.allowed("User:bob", "h", op::read, rt::topic, "x"));
}

TEST_F(Authorizer, Prefixed) {
    auto a = make();
    add(a, {allow(rt::topic, "orders-", "User:alice", op::read, pattern_type::prefixed),
            deny(rt::topic, "orders-secret", "User:alice", op::read, pattern_type::prefixed)});
    EXPECT_TRUE(a.allowed("User:alice", "h", op::read, rt::topic, "orders-1"));
    EXPECT_TRUE(a.allowed("User:alice", "h", op::read, rt::topic, "orders-"));
    EXPECT_FALSE(a.allowed("User:alice", "h", op::read, rt::topic, "orders"));
    EXPECT_FALSE(a.allowed("User:alice", "h", op::read, rt::topic, "orders-secret-2"));
    EXPECT_FALSE(a.allowed("User:alice", "h", op::read, rt::topic, "other"));
    // Many prefixes (the lookup switches to scanning): still right.
    for (int i = 0; i < 40; ++i) {
        add(a, {allow(rt::topic, "p" + std::to_string(i) + "-", "User:bob", op::write,
                      pattern_type::prefixed)});
    }
    EXPECT_TRUE(a.allowed("User:bob", "h", op::write, rt::topic, "p7-x"));
    EXPECT_FALSE(a.allowed("User:bob", "h", op::write, rt::topic, "p7x"));
}

TEST_F(Authorizer, SuperUsers) {
    auto a = make({.enabled = true, .super_users = {"User:admin", "User:ops"}});
    add(a, {deny(rt::topic, "*", "User:*", op::all)});
    EXPECT_TRUE(a.allowed("User:admin", "h", op::write, rt::topic, "a"));
    EXPECT_TRUE(a.allowed("User:ops", "h", op::alter, rt::cluster, "kafka-cluster"));
    EXPECT_FALSE(a.allowed("User:alice", "h", op::write, rt::topic, "a"));
    EXPECT_TRUE(a.is_super_user("User:admin"));
    EXPECT_FALSE(a.is_super_user("User:alice"));
}

TEST_F(Authorizer, AllowedAnyResourceOfAType) {
    auto a = make();
    EXPECT_FALSE(a.allowed_any("User:alice", "h", op::write, rt::topic));
    add(a, {allow(rt::topic, "a", "User:alice", op::write)});
    EXPECT_TRUE(a.allowed_any("User:alice", "h", op::write, rt::topic));
    EXPECT_FALSE(a.allowed_any("User:bob", "h", op::write, rt::topic));
    // Covered by a deny on the same name, or by a deny prefix: not enough.
    add(a, {deny(rt::topic, "a", "User:alice", op::write)});
    EXPECT_FALSE(a.allowed_any("User:alice", "h", op::write, rt::topic));
    add(a, {allow(rt::topic, "logs-1", "User:alice", op::write),
            deny(rt::topic, "logs", "User:alice", op::write, pattern_type::prefixed)});
    EXPECT_FALSE(a.allowed_any("User:alice", "h", op::write, rt::topic));
    add(a, {allow(rt::topic, "z", "User:*", op::all)});
    EXPECT_TRUE(a.allowed_any("User:alice", "h", op::write, rt::topic));
    add(a, {deny(rt::topic, "*", "User:alice", op::write)});
    EXPECT_FALSE(a.allowed_any("User:alice", "h", op::write, rt::topic));

    auto open = authorizer({.enabled = true, .allow_everyone_if_no_acl_found = true},
                           dir_ / "other");
    EXPECT_TRUE(open.allowed_any("User:x", "h", op::write, rt::topic));
}

TEST_F(Authorizer, InvalidBindingsAreRefusedOneByOne) {
    auto a = make();
    std::vector<acl_binding> bs = {
        allow(rt::topic, "a", "User:alice", op::write),
        allow(rt::topic, "a", "alice", op::write),              // no "Type:"
        allow(rt::topic, "a", "", op::write),                   // empty principal
        allow(rt::any, "a", "User:alice", op::write),           // not a concrete type
        allow(rt::topic, "a", "User:alice", op::any),           // not a concrete operation
        allow(rt::topic, "a", "User:alice", op::write, pattern_type::match),
        allow(rt::group, "g", "User:alice", op::write),         // groups have no WRITE
        allow(rt::cluster, "other", "User:alice", op::alter),   // cluster is kafka-cluster
        allow(rt::topic, "", "User:alice", op::write),          // empty name
        allow(rt::topic, "a", "User:alice", op::write, pattern_type::literal, ""),
        allow(rt::cluster, "kafka-cluster", "User:alice", op::idempotent_write),
    };
    bs.push_back(allow(rt::topic, "a", "User:alice", op::read));
    bs.back().permission = acl_permission::any;
    const auto results = a.create_acls(bs);
    ASSERT_EQ(results.size(), bs.size());
    EXPECT_FALSE(results[0].has_value());
    for (std::size_t i = 1; i + 2 < bs.size(); ++i) {
        EXPECT_TRUE(results[i].has_value()) << i;
    }
    EXPECT_FALSE(results[bs.size() - 2].has_value());
    EXPECT_TRUE(results.back().has_value());
    EXPECT_NE(results[1]->find("principal"), std::string::npos);
    EXPECT_EQ(a.acls().size(), 2u);
}

TEST_F(Authorizer, CreateIsIdempotentAndFiltersMatchAsKafka) {
    auto a = make();
    add(a, {allow(rt::topic, "a", "User:alice", op::write),
            allow(rt::topic, "a", "User:alice", op::write),
            allow(rt::topic, "*", "User:bob", op::read),
            allow(rt::topic, "a", "User:carol", op::read, pattern_type::prefixed),
            allow(rt::topic, "ab", "User:dave", op::read, pattern_type::prefixed),
            allow(rt::group, "a", "User:alice", op::read)});
    EXPECT_EQ(a.acls().size(), 5u);
    EXPECT_EQ(a.describe_acls({}).size(), 5u);
    EXPECT_EQ(a.describe_acls({.type = rt::group}).size(), 1u);
    EXPECT_EQ(a.describe_acls({.type = rt::topic, .name = "a", .pattern = pattern_type::any})
                  .size(),
              2u);  // literal a, prefixed a
    EXPECT_EQ(a.describe_acls({.type = rt::topic, .name = "abc", .pattern = pattern_type::match})
                  .size(),
              3u);  // literal *, prefixed a, prefixed ab
    EXPECT_EQ(
        a.describe_acls({.type = rt::topic, .name = "a", .pattern = pattern_type::literal}).size(),
        1u);
    EXPECT_EQ(a.describe_acls({.pattern = pattern_type::prefixed}).size(), 2u);
    EXPECT_EQ(a.describe_acls({.principal = "User:alice"}).size(), 2u);
    EXPECT_EQ(a.describe_acls({.operation = op::read, .permission = acl_permission::allow})
                  .size(),
              4u);
    EXPECT_TRUE(validate(acl_binding_filter{.type = rt::unknown}).has_value());
    EXPECT_FALSE(validate(acl_binding_filter{}).has_value());
}

TEST_F(Authorizer, DeleteTakesEffectAtOnce) {
    auto a = make();
    add(a, {allow(rt::topic, "a", "User:alice", op::write),
            allow(rt::topic, "b", "User:alice", op::read)});
    ASSERT_TRUE(a.allowed("User:alice", "h", op::write, rt::topic, "a"));
    std::vector<acl_binding_filter> fs = {{.type = rt::topic, .name = "a"},
                                          {.principal = "User:alice"},
                                          {.type = rt::unknown}};
    const auto results = a.delete_acls(fs);
    ASSERT_EQ(results.size(), 3u);
    EXPECT_EQ(results[0].deleted.size(), 1u);
    EXPECT_EQ(results[1].deleted.size(), 2u);  // matched against the ACLs before the request
    EXPECT_TRUE(results[2].error.has_value());
    EXPECT_TRUE(a.acls().empty());
    EXPECT_FALSE(a.allowed("User:alice", "h", op::write, rt::topic, "a"));
    EXPECT_FALSE(a.allowed("User:alice", "h", op::read, rt::topic, "b"));
}

TEST_F(Authorizer, SharedChangesApplyAtOnceAndAreNeverSaved) {
    {
        auto a = make();
        add(a, {allow(rt::topic, "own", "User:alice", op::read)});  // the data dir's
        const std::vector<acl_binding> fleet = {allow(rt::topic, "a", "User:bob", op::write),
                                                deny(rt::topic, "own", "User:alice", op::read)};
        a.apply_shared(fleet, true);
        a.apply_shared(fleet, true);  // already there: unchanged
        EXPECT_EQ(a.acls().size(), 3u);
        EXPECT_TRUE(a.allowed("User:bob", "h", op::write, rt::topic, "a"));
        EXPECT_FALSE(a.allowed("User:alice", "h", op::read, rt::topic, "own"));
        const std::vector<acl_binding> gone = {deny(rt::topic, "own", "User:alice", op::read),
                                               allow(rt::topic, "x", "User:nobody", op::read)};
        a.apply_shared(gone, false);  // the second is not there: nothing to remove
        EXPECT_EQ(a.acls().size(), 2u);
        EXPECT_TRUE(a.allowed("User:alice", "h", op::read, rt::topic, "own"));
    }
    // The file holds the data dir's own ACL only.
    auto b = make();
    const std::vector<acl_binding> own = {allow(rt::topic, "own", "User:alice", op::read)};
    EXPECT_EQ(b.acls(), own);
}

TEST_F(Authorizer, PersistenceRoundTrip) {
    {
        auto a = make();
        add(a, {allow(rt::topic, "a", "User:alice", op::write),
                deny(rt::group, "my group%1", "User:CN=x, O=y", op::read, pattern_type::prefixed,
                     "10.0.0.1"),
                allow(rt::cluster, "kafka-cluster", "User:ops", op::cluster_action),
                allow(rt::transactional_id, "tx", "User:alice", op::write)});
        a.delete_acls(std::vector<acl_binding_filter>{{.type = rt::cluster}});
    }
    auto b = make();
    const auto all = b.acls();
    ASSERT_EQ(all.size(), 3u);
    EXPECT_TRUE(b.allowed("User:alice", "h", op::write, rt::topic, "a"));
    EXPECT_TRUE(b.allowed("User:alice", "h", op::write, rt::transactional_id, "tx"));
    EXPECT_EQ(b.describe_acls({.type = rt::group}).at(0),
              deny(rt::group, "my group%1", "User:CN=x, O=y", op::read, pattern_type::prefixed,
                   "10.0.0.1"));
    EXPECT_EQ(fs::status(file_).permissions() & fs::perms::all, fs::perms::owner_read |
                                                                    fs::perms::owner_write);
}

TEST_F(Authorizer, MissingFileIsNoAcls) {
    auto a = make();
    EXPECT_TRUE(a.acls().empty());
    EXPECT_FALSE(fs::exists(file_));
}

TEST_F(Authorizer, CorruptFileGivesClearError) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"garbage\n", "not a sluice ACL file"},
        {"sluice-acls 1\nacl topic literal allow\n", ":2: expected"},
        {"sluice-acls 1\nacl topic literal allow frobnicate User:a * t\n", ":2: unknown"},
        {"sluice-acls 1\nacl topic literal allow read User:a * t%4\n", ":2: malformed"},
        {"sluice-acls 1\nacl topic literal allow read User:a * t%zz\n", ":2: malformed"},
        {"# c\nsluice-acls 1\n\nacl group literal allow write User:a * g\n", ":4: operation"},
        {"sluice-acls 1\nacl topic literal allow read alice * t\n", ":2: invalid principal"},
    };
    for (const auto& [text, want] : cases) {
        write(text);
        try {
            make();
            ADD_FAILURE() << "loaded: " << text;
        } catch (const std::runtime_error& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find(file_.string()), std::string::npos) << what;
            EXPECT_NE(what.find(want), std::string::npos) << what;
        }
    }
}

TEST(AclNames, ParseAndPrint) {
    EXPECT_EQ(parse_acl_operation("ClusterAction"), op::cluster_action);
    EXPECT_EQ(parse_acl_operation("CLUSTER_ACTION"), op::cluster_action);
    EXPECT_EQ(parse_acl_operation("Delete"), op::remove);
    EXPECT_EQ(parse_acl_operation("idempotentwrite"), op::idempotent_write);
    EXPECT_EQ(parse_acl_operation("nope"), std::nullopt);
    EXPECT_EQ(parse_acl_operation(""), std::nullopt);
    EXPECT_EQ(parse_resource_type("transactional-id"), rt::transactional_id);
    EXPECT_EQ(parse_pattern_type("Prefixed"), pattern_type::prefixed);
    EXPECT_EQ(parse_acl_permission("deny"), acl_permission::deny);
    EXPECT_EQ(to_string(op::remove), "DELETE");
    EXPECT_EQ(to_string(static_cast<op>(99)), "UNKNOWN");
    EXPECT_EQ(describe(allow(rt::topic, "a", "User:alice", op::write)),
              "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW) on "
              "TOPIC:LITERAL:a");
}

}  // namespace
}  // namespace sluice::auth
