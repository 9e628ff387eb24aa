#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "gateway/cli/quotas_command.h"
#include "gateway/cli/security_state.h"
#include "gateway/cli/users_command.h"
#include "gateway/core/config.h"

namespace sluice::gateway {
namespace {

using args = std::vector<std::string>;

security_location location_of(const args& a) {
    security_location where;
    command_flags flags("users", a);
    while (flags.next()) {
        if (!where.take(flags, "users")) {
            ADD_FAILURE() << "not a location flag: " << flags.arg();
        }
    }
    return where;
}

std::string check_refusal(const security_location& where) {
    try {
        where.check("users list");
    } catch (const config_error& e) {
        return e.what();
    }
    return "";
}

TEST(SecurityLocation, TakesTheUpstreamAndItsProperties) {
    const auto where = location_of({"--upstream", "k1:9092,k2:9092", "--upstream.security.protocol",
                                    "SASL_SSL", "--upstream.request.timeout.ms=2000"});
    EXPECT_TRUE(where.is_upstream());
    EXPECT_FALSE(where.data_dir);
    EXPECT_EQ(where.upstream.at("upstream.bootstrap.servers"), "k1:9092,k2:9092");
    EXPECT_EQ(where.upstream.at("upstream.security.protocol"), "SASL_SSL");
    EXPECT_EQ(where.upstream.at("upstream.request.timeout.ms"), "2000");
    EXPECT_EQ(check_refusal(where), "");
}

TEST(SecurityLocation, OneOfDataDirAndUpstreamExactly) {
    EXPECT_NE(check_refusal(location_of({"--data-dir", "/d", "--upstream", "k:9092"}))
                  .find("not both"),
              std::string::npos);
    EXPECT_NE(check_refusal(location_of({})).find("--data-dir DIR is required"),
              std::string::npos);
    EXPECT_NE(check_refusal(location_of({"--upstream.security.protocol", "SSL"}))
                  .find("needs --upstream BOOTSTRAP"),
              std::string::npos);
    EXPECT_THROW(location_of({"--upstream", ""}), config_error);
    EXPECT_THROW(location_of({"--upstream.", "x"}), config_error);
}

TEST(SecurityLocation, OtherFlagsAreLeftToTheCommand) {
    security_location where;
    const args a{"--user", "alice"};
    command_flags flags("quotas", a);
    ASSERT_TRUE(flags.next());
    EXPECT_FALSE(where.take(flags, "quotas"));
    EXPECT_EQ(flags.arg(), "--user");
}

TEST(SecurityState, UpstreamWithoutAnOpenerIsAClearError) {
    // The commands' default opener is none (only main.cc hands in the real one).
    std::istringstream in("secret\n");
    std::ostringstream out;
    try {
        run_users_command({"set", "alice", "--upstream", "127.0.0.1:9"}, in, out);
        FAIL() << "expected a refusal";
    } catch (const config_error& e) {
        EXPECT_NE(std::string(e.what()).find("--upstream is not available"), std::string::npos)
            << e.what();
    }
}

TEST(SecurityState, QuotasTakeUpstreamInsteadOfADataDir) {
    const auto a = parse_quotas_args(
        {"list", "--upstream", "k:9092", "--upstream.client.id", "ops"});
    EXPECT_TRUE(a.where.is_upstream());
    EXPECT_EQ(a.where.upstream.at("upstream.client.id"), "ops");
}

TEST(SecurityState, FileModeReadsAndSavesTheDataDir) {
    const auto dir = std::filesystem::temp_directory_path() /
                     ("sluice-security-state-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    {
        security_location where;
        where.data_dir = dir;
        security_state state("users", where, {}, "in use");
        EXPECT_FALSE(state.upstream());
        state.users().set("alice", auth::make_user_credentials("pw", 4096));
        state.users().save();
        EXPECT_EQ(state.publish(), 0u);
    }
    {
        security_location where;
        where.data_dir = dir;
        security_state state("users", where, {}, "in use");
        EXPECT_TRUE(state.users().find("alice").has_value());
        EXPECT_TRUE(state.acls().acls().empty());
        EXPECT_TRUE(state.quotas().entries().empty());
        EXPECT_TRUE(state.aws_keys().empty());
    }
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::gateway
