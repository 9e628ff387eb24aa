#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "gateway/core/config.h"
#include "gateway/cli/quotas_command.h"

namespace sluice::gateway {
namespace {

using args = std::vector<std::string>;

std::filesystem::path quotas_dir(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() /
               ("sluice-quotas-test-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove_all(dir);
    return dir;
}

// The message of the config_error `a` throws, or "" when it parses.
std::string refusal(const args& a) {
    try {
        parse_quotas_args(a);
    } catch (const config_error& e) {
        return e.what();
    }
    return "";
}

TEST(QuotasCommand, ParsesSetWithEveryKey) {
    const auto a = parse_quotas_args(
        {"set", "--data-dir", "/d", "--user", "alice", "--add",
         "producer_byte_rate=1048576, consumer_byte_rate=2097152,request_percentage=50"});
    EXPECT_EQ(a.action, "set");
    EXPECT_EQ(*a.where.data_dir, "/d");
    EXPECT_EQ(a.entity, (auth::quota_entity{auth::entity_part::named("alice"), {}}));
    ASSERT_EQ(a.ops.size(), 3u);
    EXPECT_EQ(a.ops[0].key, "producer_byte_rate");
    EXPECT_EQ(a.ops[0].value, 1048576);
    EXPECT_EQ(a.ops[1].key, "consumer_byte_rate");
    EXPECT_EQ(a.ops[2].value, 50);
    EXPECT_FALSE(a.ops[2].remove);
}

TEST(QuotasCommand, ParsesEntitiesAndInlineValues) {
    const auto a = parse_quotas_args({"delete", "--data-dir=/d", "--client-default",
                                      "--user=bob", "--delete-config=producer_byte_rate"});
    EXPECT_EQ(a.entity, (auth::quota_entity{auth::entity_part::named("bob"),
                                            auth::entity_part::default_entity()}));
    ASSERT_EQ(a.ops.size(), 1u);
    EXPECT_TRUE(a.ops[0].remove);
    const auto b = parse_quotas_args({"set", "--data-dir", "/d", "--user-default", "--client-id",
                                      "c1", "--add-config", "request_percentage=12.5"});
    EXPECT_EQ(b.entity, (auth::quota_entity{auth::entity_part::default_entity(),
                                            auth::entity_part::named("c1")}));
    EXPECT_EQ(b.ops[0].value, 12.5);
    const auto c = parse_quotas_args({"delete", "--data-dir", "/d", "--client-id", "c",
                                      "--keys", "request_percentage,consumer_byte_rate"});
    EXPECT_EQ(c.ops.size(), 2u);
    const auto l = parse_quotas_args({"list", "--data-dir", "/d"});
    EXPECT_TRUE(l.entity_parts.empty());
}

TEST(QuotasCommand, RefusesBadFlags) {
    const std::string d = "--data-dir=/d";
    EXPECT_NE(refusal({"frob", d}).find("unknown action 'frob'"), std::string::npos);
    EXPECT_NE(refusal({"list"}).find("--data-dir DIR is required"), std::string::npos);
    EXPECT_NE(refusal({"list", d, "--bogus"}).find("unknown option '--bogus'"),
              std::string::npos);
    EXPECT_NE(refusal({"list", d, "extra"}).find("unexpected argument"), std::string::npos);
    EXPECT_NE(refusal({"set", d, "--add", "producer_byte_rate=1"}).find("name an entity"),
              std::string::npos);
    EXPECT_NE(refusal({"set", d, "--user", "a"}).find("give --add"), std::string::npos);
    EXPECT_NE(refusal({"delete", d, "--user", "a"}).find("give --delete-config"),
              std::string::npos);
    EXPECT_NE(refusal({"set", d, "--user", "a", "--user-default", "--add",
                       "producer_byte_rate=1"})
                  .find("already given"),
              std::string::npos);
    EXPECT_NE(refusal({"set", d, "--client-id", "a", "--client-id", "b", "--add",
                       "producer_byte_rate=1"})
                  .find("already given"),
              std::string::npos);
    EXPECT_NE(refusal({"set", d, "--user", "", "--add", "producer_byte_rate=1"})
                  .find("empty value"),
              std::string::npos);
    EXPECT_NE(refusal({"set", d, "--user"}).find("missing value"), std::string::npos);
    EXPECT_NE(refusal({"set", d, "--user-default=x", "--add", "producer_byte_rate=1"})
                  .find("takes no value"),
              std::string::npos);
    EXPECT_NE(refusal({"list", d, "--add", "producer_byte_rate=1"}).find("with set only"),
              std::string::npos);
    EXPECT_NE(refusal({"set", d, "--user", "a", "--add", "producer_byte_rate=1",
                       "--delete-config", "consumer_byte_rate"})
                  .find("with delete only"),
              std::string::npos);
}

TEST(QuotasCommand, RefusesWhatAlterClientQuotasRefuses) {
    auto set = [](const std::string& add) {
        return refusal({"set", "--data-dir", "/d", "--user", "a", "--add", add});
    };
    EXPECT_NE(set("frob=1").find("Invalid configuration key frob"), std::string::npos);
    EXPECT_NE(set("producer_byte_rate=1.5").find("must be a Long value"), std::string::npos);
    EXPECT_NE(set("producer_byte_rate=0").find("must be a positive number"), std::string::npos);
    EXPECT_NE(set("request_percentage=-5").find("must be a positive number"),
              std::string::npos);
    EXPECT_NE(set("producer_byte_rate=1,producer_byte_rate=2").find("duplicate quota key"),
              std::string::npos);
    for (const char* bad : {"abc", "", "0x10", "+5", "1e", "5 0", "inf"}) {
        const auto why = set(std::string("producer_byte_rate=") + bad);
        EXPECT_FALSE(why.empty()) << bad;
    }
    EXPECT_NE(set("producer_byte_rate").find("expected KEY=VALUE"), std::string::npos);
    EXPECT_NE(set("=5").find("expected KEY=VALUE"), std::string::npos);
    EXPECT_NE(set("producer_byte_rate=1,").find("expected KEY=VALUE"), std::string::npos);
    EXPECT_NE(refusal({"delete", "--data-dir", "/d", "--user", "a", "--delete-config", "frob"})
                  .find("Invalid configuration key frob"),
              std::string::npos);
}

TEST(QuotasCommand, DescribesAsKafkaConfigs) {
    const auth::quota_entity alice_default{auth::entity_part::named("alice"),
                                           auth::entity_part::default_entity()};
    EXPECT_EQ(describe_quota_line(alice_default, {{auth::quota_kind::producer_byte_rate, 1048576},
                                                  {auth::quota_kind::request_percentage, 12.5}}),
              "Quota configs for user-principal 'alice', the default client-id are "
              "producer_byte_rate=1048576.0, request_percentage=12.5");
    const auth::quota_entity client{{}, auth::entity_part::named("c1")};
    EXPECT_EQ(describe_quota_line(client, {{auth::quota_kind::consumer_byte_rate, 1e10}}),
              "Quota configs for client-id 'c1' are consumer_byte_rate=10000000000.0");
}

TEST(QuotasCommand, SetListDeleteLeaveTheFileAsAlterClientQuotasWould) {
    const auto dir = quotas_dir("roundtrip");
    std::ostringstream out;
    ASSERT_EQ(run_quotas_command({"set", "--data-dir", dir.string(), "--user", "alice", "--add",
                                  "producer_byte_rate=1000,request_percentage=50"},
                                 out),
              0);
    std::ostringstream listed;
    ASSERT_EQ(run_quotas_command({"list", "--data-dir", dir.string()}, listed), 0);
    EXPECT_EQ(listed.str(), "Quota configs for user-principal 'alice' are "
                            "producer_byte_rate=1000.0, request_percentage=50.0\n");
    const auth::client_quotas stored({}, auth::client_quotas::path_in(dir));
    const auto bound = stored.find(auth::quota_kind::producer_byte_rate, "alice", "any");
    ASSERT_TRUE(bound);
    EXPECT_EQ(bound->value, 1000);
    ASSERT_EQ(run_quotas_command({"delete", "--data-dir", dir.string(), "--user", "alice",
                                  "--delete-config", "producer_byte_rate,request_percentage"},
                                 out),
              0);
    std::ostringstream empty;
    ASSERT_EQ(run_quotas_command({"list", "--data-dir", dir.string()}, empty), 0);
    EXPECT_EQ(empty.str(), "");
    std::filesystem::remove_all(dir);
}

TEST(QuotasCommand, BadInputLeavesTheFileUntouched) {
    const auto dir = quotas_dir("untouched");
    std::ostringstream out;
    ASSERT_EQ(run_quotas_command({"set", "--data-dir", dir.string(), "--client-default",
                                  "--add", "consumer_byte_rate=2000"},
                                 out),
              0);
    const auto before = auth::client_quotas({}, auth::client_quotas::path_in(dir)).entries();
    EXPECT_THROW(run_quotas_command({"set", "--data-dir", dir.string(), "--client-default",
                                     "--add", "consumer_byte_rate=2000,frob=1"},
                                    out),
                 config_error);
    EXPECT_EQ(auth::client_quotas({}, auth::client_quotas::path_in(dir)).entries(), before);
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::gateway
