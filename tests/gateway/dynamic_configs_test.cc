// The dynamic config store of the Kafka front (gateway/kafka/dynamic_configs.h): Kafka's
// checks and errors, what it hands the backend, and its file across a reload.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gateway/kafka/dynamic_configs.h"

namespace sluice::gateway {
namespace {
namespace api = backend::api;
namespace kafka = protocol::kafka;

api::backend_error fail(api::errc e, std::string message = {}) {
    return {api::make_error_code(e), std::move(message)};
}

/// Takes log.retention.ms and log.cleanup.policy as dynamic; a value "bad" is refused.
class fake_topics final : public api::topics {
public:
    api::dynamic_broker_configs recorded;

    std::vector<std::string> dynamic_config_names() const override {
        return {"log.cleanup.policy", "log.retention.ms"};
    }
    api::backend_result<void> set_dynamic_configs(api::dynamic_broker_configs c,
                                                bool validate_only) override {
        for (const auto* layer : {&c.broker, &c.cluster_default}) {
            for (const auto& [k, v] : *layer) {
                if (v == "bad") {
                    return std::unexpected(fail(api::errc::invalid_config, "bad value for " + k));
                }
            }
        }
        if (!validate_only) {
            recorded = std::move(c);
        }
        return {};
    }
    api::awaitable<void> apply_dynamic_configs() override { co_return; }

    api::awaitable<std::optional<api::topic_description>> describe(topic_name) override {
        co_return std::nullopt;
    }
    api::awaitable<std::optional<api::topic_description>> describe(uuid) override {
        co_return std::nullopt;
    }
    api::awaitable<std::vector<api::topic_description>> list() override {
        co_return std::vector<api::topic_description>{};
    }
    api::awaitable<api::backend_result<api::created_topic>> create(api::new_topic) override {
        co_return std::unexpected(fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<void>> remove(topic_name) override {
        co_return std::unexpected(fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<void>> create_partitions(topic_name, std::int32_t,
                                                              bool) override {
        co_return std::unexpected(fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<std::vector<api::config_entry>>> describe_configs(
        topic_name) override {
        co_return std::unexpected(fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<void>> replace_configs(topic_name,
                                                            std::map<std::string, std::string>,
                                                            bool) override {
        co_return std::unexpected(fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<void>> alter_configs(topic_name,
                                                          std::vector<api::config_change>,
                                                          bool) override {
        co_return std::unexpected(fail(api::errc::unsupported));
    }
    std::vector<api::config_entry> backend_configs() const override { return {}; }
    std::vector<api::partition_state> partition_states() const override { return {}; }
    api::awaitable<api::storage_description> describe_storage(std::vector<topic_name>) override {
        co_return api::storage_description{};
    }
};

/// Group configs: any consumer.* name, a value "bad" refused.
class fake_groups final : public api::groups {
public:
    std::map<std::string, std::map<std::string, std::string>> recorded;

    api::backend_result<void> set_group_configs(const group_id& g,
                                              std::map<std::string, std::string> configs,
                                              bool validate_only) override {
        for (const auto& [k, v] : configs) {
            if (!k.starts_with("consumer.") || v == "bad") {
                return std::unexpected(fail(api::errc::invalid_config, "refused " + k));
            }
        }
        if (!validate_only) {
            recorded[g.value] = std::move(configs);
        }
        return {};
    }
    std::vector<api::config_entry> describe_group_configs(const group_id&) const override {
        return {};
    }

    bool loaded() const override { return true; }
    api::awaitable<api::join_group_result> join_group(api::join_group_request) override {
        co_return api::join_group_result{};
    }
    api::awaitable<api::sync_group_result> sync_group(api::sync_group_request) override {
        co_return api::sync_group_result{};
    }
    api::awaitable<api::backend_result<void>> heartbeat(api::heartbeat_request) override {
        co_return api::backend_result<void>();
    }
    api::awaitable<api::leave_group_result> leave_group(group_id,
                                                        std::vector<api::leave_member>) override {
        co_return api::leave_group_result{};
    }
    api::awaitable<api::consumer_heartbeat_result> consumer_heartbeat(
        api::consumer_heartbeat_request) override {
        co_return api::consumer_heartbeat_result{};
    }
    api::awaitable<api::offset_commit_result> commit_offsets(api::offset_commit_request) override {
        co_return api::offset_commit_result{};
    }
    api::awaitable<std::vector<api::offset_fetch_result>> fetch_offsets(
        std::vector<api::offset_fetch_request>) override {
        co_return std::vector<api::offset_fetch_result>{};
    }
    api::awaitable<api::offset_delete_result> delete_offsets(
        group_id, std::vector<api::topic_partition_list>) override {
        co_return api::offset_delete_result{};
    }
    api::awaitable<std::vector<api::group_deletion>> delete_groups(std::vector<group_id>) override {
        co_return std::vector<api::group_deletion>{};
    }
    api::awaitable<std::vector<api::listed_group>> list_groups(std::vector<std::string>,
                                                               std::vector<std::string>) override {
        co_return std::vector<api::listed_group>{};
    }
    api::awaitable<std::vector<api::described_group>> describe_groups(
        std::vector<group_id>) override {
        co_return std::vector<api::described_group>{};
    }
    api::awaitable<std::vector<api::consumer_group_description>> describe_consumer_groups(
        std::vector<group_id>) override {
        co_return std::vector<api::consumer_group_description>{};
    }
    std::vector<api::group_view> view_groups() override { return {}; }
    std::optional<api::group_view> view_group(const group_id&) override { return std::nullopt; }
    api::group_counters counters() const override { return {}; }
};

class DynamicConfigs : public ::testing::Test {
protected:
    std::filesystem::path dir;
    fake_topics topics;
    fake_groups groups;

    void SetUp() override {
        dir = std::filesystem::temp_directory_path() /
              ("sluice-dyn-test-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
    }
    void TearDown() override { std::filesystem::remove_all(dir); }

    dynamic_configs store() {
        return dynamic_configs(dynamic_configs::path_in(dir), 1, topics, groups,
                               [](const std::string& n) { return n == "num.partitions"; });
    }
    static config_op set(std::string n, std::string v) {
        return {std::move(n), config_op::kind::set, std::move(v)};
    }
};

TEST_F(DynamicConfigs, BrokerAndDefaultLayersReachTheBackendAndSurviveAReload) {
    {
        auto s = store();
        auto r = s.alter_broker("", {set("log.retention.ms", "1000")}, false, false);
        EXPECT_EQ(r.error, kafka::error_code::none) << r.message;
        EXPECT_TRUE(r.apply_needed);
        r = s.alter_broker("1", {set("log.cleanup.policy", "compact")}, false, false);
        EXPECT_EQ(r.error, kafka::error_code::none) << r.message;
        r = s.alter_group("odd group\nname", {set("consumer.session.timeout.ms", "50000")}, false,
                          false);
        EXPECT_EQ(r.error, kafka::error_code::none) << r.message;
    }
    EXPECT_EQ(std::filesystem::status(dynamic_configs::path_in(dir)).permissions() &
                  std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    topics.recorded = {};
    groups.recorded.clear();
    auto s = store();
    s.load();
    EXPECT_EQ(topics.recorded.cluster_default,
              (std::map<std::string, std::string>{{"log.retention.ms", "1000"}}));
    EXPECT_EQ(topics.recorded.broker,
              (std::map<std::string, std::string>{{"log.cleanup.policy", "compact"}}));
    EXPECT_EQ(groups.recorded["odd group\nname"].at("consumer.session.timeout.ms"), "50000");
    EXPECT_EQ(s.cluster_default().at("log.retention.ms"), "1000");
}

TEST_F(DynamicConfigs, RefusalsCarryKafkasErrorsAndChangeNothing) {
    auto s = store();
    auto r = s.alter_broker("1", {set("num.partitions", "3"), set("log.cleaner.threads", "2")},
                            false, false);
    EXPECT_EQ(r.error, kafka::error_code::invalid_request);
    EXPECT_EQ(r.message,
              "Cannot update these configs dynamically: Set(log.cleaner.threads, num.partitions)");
    r = s.alter_broker("1", {set("made.up", "1")}, false, false);
    EXPECT_EQ(r.error, kafka::error_code::invalid_config);
    r = s.alter_broker("2", {set("log.retention.ms", "1")}, false, false);
    EXPECT_EQ(r.error, kafka::error_code::invalid_request);
    EXPECT_EQ(r.message, "Unexpected broker id, expected 1, but received 2");
    r = s.alter_broker("x", {}, false, false);
    EXPECT_EQ(r.message, "Node id must be an integer, but it is: x");
    r = s.alter_broker("1", {set("log.retention.ms", "bad")}, false, false);
    EXPECT_EQ(r.error, kafka::error_code::invalid_request);
    r = s.alter_broker("1", {{"log.retention.ms", config_op::kind::set, std::nullopt}}, false,
                       false);
    EXPECT_EQ(r.error, kafka::error_code::invalid_request);
    EXPECT_EQ(r.message, "Null value not supported for : log.retention.ms");
    r = s.alter_broker("1", {set("log.retention.ms", "1"), set("log.retention.ms", "2")}, false,
                       false);
    EXPECT_EQ(r.message, "Error due to duplicate config keys");
    r = s.alter_group("g", {set("consumer.x", "bad")}, false, false);
    EXPECT_EQ(r.error, kafka::error_code::invalid_config);
    // validate_only: checked, not kept.
    r = s.alter_broker("1", {set("log.retention.ms", "5")}, false, true);
    EXPECT_EQ(r.error, kafka::error_code::none);
    EXPECT_FALSE(r.apply_needed);
    EXPECT_TRUE(topics.recorded.broker.empty());
    EXPECT_FALSE(std::filesystem::exists(dynamic_configs::path_in(dir)));
}

TEST_F(DynamicConfigs, IncrementalOperationsAsKafka) {
    auto s = store();
    using k = config_op::kind;
    auto alter = [&](std::vector<config_op> ops) {
        return s.alter_broker("", std::move(ops), false, false);
    };
    EXPECT_EQ(alter({{"log.cleanup.policy", k::append, "compact"}}).error,
              kafka::error_code::none);
    EXPECT_EQ(alter({{"log.cleanup.policy", k::append, "delete,compact"}}).error,
              kafka::error_code::none);
    EXPECT_EQ(topics.recorded.cluster_default.at("log.cleanup.policy"), "compact,delete");
    EXPECT_EQ(alter({{"log.cleanup.policy", k::subtract, "compact"}}).error,
              kafka::error_code::none);
    EXPECT_EQ(topics.recorded.cluster_default.at("log.cleanup.policy"), "delete");
    auto r = alter({{"log.retention.ms", k::append, "1"}});
    EXPECT_EQ(r.error, kafka::error_code::invalid_config);
    EXPECT_EQ(r.message, "Config value append is not allowed for config key: log.retention.ms");
    EXPECT_EQ(alter({{"log.cleanup.policy", k::remove, std::nullopt}}).error,
              kafka::error_code::none);
    EXPECT_TRUE(topics.recorded.cluster_default.empty());
    // The legacy form replaces the whole set.
    ASSERT_EQ(alter({set("log.retention.ms", "7")}).error, kafka::error_code::none);
    ASSERT_EQ(s.alter_broker("", {set("log.cleanup.policy", "compact")}, true, false).error,
              kafka::error_code::none);
    EXPECT_EQ(topics.recorded.cluster_default,
              (std::map<std::string, std::string>{{"log.cleanup.policy", "compact"}}));
}

TEST_F(DynamicConfigs, ADamagedFileStopsTheLoad) {
    std::ofstream(dynamic_configs::path_in(dir)) << "sluice-dynamic-configs 1\nbroker - %ZZ 1\n";
    auto s = store();
    EXPECT_THROW(s.load(), std::runtime_error);
}

TEST_F(DynamicConfigs, StoredConfigsTheBackendNowRefusesAreDropped) {
    std::ofstream(dynamic_configs::path_in(dir))
        << "sluice-dynamic-configs 1\nbroker - log.retention.ms bad\n"
           "broker - log.cleanup.policy compact\n";
    auto s = store();
    s.load();
    EXPECT_EQ(topics.recorded.cluster_default,
              (std::map<std::string, std::string>{{"log.cleanup.policy", "compact"}}));
}

}  // namespace
}  // namespace sluice::gateway
