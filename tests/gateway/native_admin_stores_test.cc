#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "gateway/server/native_admin_stores.h"

namespace sluice::gateway {
namespace {

namespace api = backend::api;

class NativeAclStore : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("sluice-acl-store-" + std::to_string(::getpid()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::filesystem::path file() const { return dir_ / "acls"; }

    static api::acl_binding topic_read(std::string principal) {
        return api::acl_binding{api::acl_resource_type::topic, "orders",
                                api::acl_pattern_type::literal, std::move(principal), "*",
                                api::acl_operation::read, api::acl_permission::allow};
    }

    std::filesystem::path dir_;
};

TEST_F(NativeAclStore, AnswersUnsupportedWithTheAuthorizerOff) {
    auth::authorizer authz({.enabled = false}, file());
    auto store = make_authorizer_acl_store(authz);
    const auto described = store->describe_acls(api::acl_filter{});
    ASSERT_FALSE(described);
    EXPECT_EQ(described.error().reason(), api::errc::unsupported);
    EXPECT_NE(described.error().message.find("No Authorizer"), std::string::npos);
    EXPECT_EQ(store->create_acls({topic_read("User:alice")}).error().reason(),
              api::errc::unsupported);
    EXPECT_EQ(store->delete_acls(api::acl_filter{}).error().reason(), api::errc::unsupported);
}

TEST_F(NativeAclStore, CreatesDescribesAndDeletesThroughTheAuthorizer) {
    auth::authorizer authz({.enabled = true}, file());
    auto store = make_authorizer_acl_store(authz);
    ASSERT_TRUE(store->create_acls({topic_read("User:alice"), topic_read("User:bob")}));
    // In force: the authorizer decides with them.
    EXPECT_TRUE(authz.allowed("User:alice", "10.0.0.1", auth::acl_operation::read,
                              auth::resource_type::topic, "orders"));

    api::acl_filter alice;
    alice.principal = "User:alice";
    const auto found = store->describe_acls(alice);
    ASSERT_TRUE(found);
    EXPECT_EQ(*found, std::vector<api::acl_binding>{topic_read("User:alice")});
    EXPECT_EQ(store->describe_acls(api::acl_filter{})->size(), 2u);

    const auto deleted = store->delete_acls(alice);
    ASSERT_TRUE(deleted);
    EXPECT_EQ(*deleted, std::vector<api::acl_binding>{topic_read("User:alice")});
    EXPECT_EQ(store->describe_acls(api::acl_filter{})->size(), 1u);
    EXPECT_FALSE(authz.allowed("User:alice", "10.0.0.1", auth::acl_operation::read,
                               auth::resource_type::topic, "orders"));
}

TEST_F(NativeAclStore, RefusesWhatCannotBeStoredAndStoresNoneOfTheBatch) {
    auth::authorizer authz({.enabled = true}, file());
    auto store = make_authorizer_acl_store(authz);
    auto bad = topic_read("User:alice");
    bad.resource_type = api::acl_resource_type::cluster;  // a cluster is named kafka-cluster
    const auto created = store->create_acls({topic_read("User:bob"), bad});
    ASSERT_FALSE(created);
    EXPECT_EQ(created.error().reason(), api::errc::invalid_request);
    EXPECT_TRUE(store->describe_acls(api::acl_filter{})->empty());

    api::acl_filter match_any;
    match_any.operation = api::acl_operation::unknown;  // not a filter Kafka takes
    const auto refused = store->describe_acls(match_any);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().reason(), api::errc::invalid_request);
}

}  // namespace
}  // namespace sluice::gateway
