// Contract: topics (backend/api/topics.h). Creating, describing, listing, deleting and growing
// topics, and their configs, as Kafka's admin APIs show them to clients.
#include <algorithm>

#include "tests/backend/contract/contract_backends.h"

namespace sluice::backend::contract {
namespace {

template <typename F>
class TopicsContract : public BackendContract<F> {};
TYPED_TEST_SUITE(TopicsContract, backend_factories, factory_names);

TYPED_TEST(TopicsContract, CreateMakesTopicWithPartitionsAndConfigs) {
    auto r = this->try_create("orders", 3, {{"retention.ms", "3600000"}});
    ASSERT_TRUE(r) << r.error().code.message();
    EXPECT_EQ(r->topic.name, topic_name("orders"));
    EXPECT_EQ(r->topic.partitions, 3);
    EXPECT_FALSE(r->topic.internal);

    auto d = this->run(this->topics().describe(topic_name("orders")));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->partitions, 3);
    EXPECT_EQ(d->overrides.at("retention.ms"), "3600000");
    EXPECT_EQ(d->id, r->topic.id);
    EXPECT_NE(d->id, uuid{});

    auto e = this->config_of("orders", "retention.ms");
    ASSERT_TRUE(e);
    EXPECT_EQ(e->value, "3600000");
    EXPECT_EQ(e->source, api::config_source::dynamic_topic);
    // Each partition exists from the start, empty.
    for (std::int32_t p = 0; p < 3; ++p) {
        EXPECT_EQ(this->earliest("orders", p), 0);
        EXPECT_EQ(this->latest("orders", p), 0);
    }
}

TYPED_TEST(TopicsContract, CreateAnswersEveryConfigOfTheNewTopic) {
    auto r = this->try_create("described", 1, {{"cleanup.policy", "compact"}});
    ASSERT_TRUE(r);
    auto it = std::find_if(r->configs.begin(), r->configs.end(),
                           [](const auto& e) { return e.name == "cleanup.policy"; });
    ASSERT_NE(it, r->configs.end());
    EXPECT_EQ(it->value, "compact");
    // Defaults are listed too, with their source.
    auto ret = std::find_if(r->configs.begin(), r->configs.end(),
                            [](const auto& e) { return e.name == "retention.ms"; });
    ASSERT_NE(ret, r->configs.end());
    EXPECT_NE(ret->source, api::config_source::dynamic_topic);
}

TYPED_TEST(TopicsContract, DescribeByIdFindsTheTopic) {
    this->create_topic("by-id", 2);
    auto byname = this->run(this->topics().describe(topic_name("by-id")));
    ASSERT_TRUE(byname);
    auto byid = this->run(this->topics().describe(byname->id));
    ASSERT_TRUE(byid);
    EXPECT_EQ(byid->name, topic_name("by-id"));
    EXPECT_EQ(byid->partitions, 2);
    EXPECT_FALSE(this->run(this->topics().describe(uuid::random())));
}

TYPED_TEST(TopicsContract, DuplicateCreateFailsWithTopicAlreadyExists) {
    this->create_topic("twice", 1);
    auto again = this->try_create("twice", 4);
    ASSERT_FALSE(again);
    EXPECT_EQ(api::reason(again.error().code), api::errc::topic_already_exists);
    // The first topic is untouched.
    EXPECT_EQ(this->run(this->topics().describe(topic_name("twice")))->partitions, 1);
}

TYPED_TEST(TopicsContract, ValidateOnlyCreatesNothing) {
    auto r = this->try_create("dry-run", 2, {}, true);
    ASSERT_TRUE(r) << r.error().code.message();
    EXPECT_EQ(r->topic.partitions, 2);
    EXPECT_FALSE(this->run(this->topics().describe(topic_name("dry-run"))));
    // And checks as a real creation does.
    this->create_topic("exists", 1);
    auto dup = this->try_create("exists", 1, {}, true);
    ASSERT_FALSE(dup);
    EXPECT_EQ(api::reason(dup.error().code), api::errc::topic_already_exists);
}

TYPED_TEST(TopicsContract, ListIsSortedAndIncludesNewTopics) {
    this->create_topic("zeta", 1);
    this->create_topic("alpha", 1);
    auto all = this->run(this->topics().list());
    std::vector<std::string> names;
    for (const auto& t : all) {
        names.push_back(t.name.value);
    }
    EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
    EXPECT_NE(std::find(names.begin(), names.end(), "alpha"), names.end());
    EXPECT_NE(std::find(names.begin(), names.end(), "zeta"), names.end());
}

TYPED_TEST(TopicsContract, RemoveDeletesTheTopic) {
    this->create_topic("doomed", 2);
    this->produce_values("doomed", 0, {"a"});
    auto r = this->run(this->topics().remove(topic_name("doomed")));
    ASSERT_TRUE(r) << r.error().code.message();
    EXPECT_FALSE(this->run(this->topics().describe(topic_name("doomed"))));
    auto all = this->run(this->topics().list());
    EXPECT_EQ(std::find_if(all.begin(), all.end(),
                           [](const auto& t) { return t.name.value == "doomed"; }),
              all.end());
    // The name can be used again, for a new and empty topic.
    this->create_topic("doomed", 1);
    EXPECT_EQ(this->latest("doomed"), 0);
}

TYPED_TEST(TopicsContract, RemoveUnknownTopicFails) {
    auto r = this->run(this->topics().remove(topic_name("never-made")));
    ASSERT_FALSE(r);
    EXPECT_EQ(api::reason(r.error().code), api::errc::unknown_topic_or_partition);
}

TYPED_TEST(TopicsContract, InternalTopicsCannotBeRemoved) {
    // A committed offset makes sure the backend's own state has a topic (Kafka's
    // __consumer_offsets is created on first use).
    this->create_topic("consumed", 1);
    api::offset_commit_request commit;
    commit.group_id = group_id("g");
    commit.topics.push_back({topic_name("consumed"), {{partition_id(0), offset(0), -1, {}}}});
    this->run(this->groups().commit_offsets(std::move(commit)));
    auto all = this->run(this->topics().list());
    auto internal = std::find_if(all.begin(), all.end(), [](const auto& t) { return t.internal; });
    if (internal == all.end()) {
        GTEST_SKIP() << "the backend lists no internal topic";
    }
    auto r = this->run(this->topics().remove(internal->name));
    ASSERT_FALSE(r);
    EXPECT_EQ(api::reason(r.error().code), api::errc::policy_violation);
    EXPECT_TRUE(this->run(this->topics().describe(internal->name)));
}

TYPED_TEST(TopicsContract, InvalidNamesAreRefused) {
    for (std::string name : {std::string(""), std::string("."), std::string(".."),
                             std::string("has/slash"), std::string("has space"),
                             std::string(250, 'n')}) {
        auto r = this->try_create(name, 1);
        ASSERT_FALSE(r) << "'" << name << "' was accepted";
        EXPECT_EQ(api::reason(r.error().code), api::errc::invalid_topic_name) << "'" << name << "'";
    }
    // The longest legal name (249 characters) and Kafka's other characters are fine.
    this->create_topic(std::string(249, 'n'), 1);
    this->create_topic("a.b_c-D9", 1);
}

TYPED_TEST(TopicsContract, PartitionCountBelowOneIsRefused) {
    for (std::int32_t n : {0, -5}) {
        auto r = this->try_create("no-partitions", n);
        ASSERT_FALSE(r) << n;
        EXPECT_EQ(api::reason(r.error().code), api::errc::invalid_partitions);
    }
    EXPECT_FALSE(this->run(this->topics().describe(topic_name("no-partitions"))));
}

TYPED_TEST(TopicsContract, UnknownOrBadConfigIsRefusedWithItsName) {
    auto unknown = this->try_create("bad-config", 1, {{"no.such.config", "1"}});
    ASSERT_FALSE(unknown);
    EXPECT_EQ(api::reason(unknown.error().code), api::errc::invalid_config);
    EXPECT_NE(unknown.error().message.find("no.such.config"), std::string::npos)
        << unknown.error().message;

    auto bad = this->try_create("bad-config", 1, {{"retention.ms", "soon"}});
    ASSERT_FALSE(bad);
    EXPECT_EQ(api::reason(bad.error().code), api::errc::invalid_config);
    EXPECT_NE(bad.error().message.find("retention.ms"), std::string::npos) << bad.error().message;
    EXPECT_FALSE(this->run(this->topics().describe(topic_name("bad-config"))));
}

TYPED_TEST(TopicsContract, CreatePartitionsRaisesTheCount) {
    this->create_topic("growing", 2);
    auto r = this->run(this->topics().create_partitions(topic_name("growing"), 5, false));
    ASSERT_TRUE(r) << r.error().code.message();
    EXPECT_EQ(this->run(this->topics().describe(topic_name("growing")))->partitions, 5);
    // The new partitions take records.
    EXPECT_EQ(this->produce_values("growing", 4, {"x"}), 0);
    EXPECT_EQ(this->latest("growing", 4), 1);
}

TYPED_TEST(TopicsContract, CreatePartitionsValidateOnlyChangesNothing) {
    this->create_topic("dry-grow", 1);
    auto r = this->run(this->topics().create_partitions(topic_name("dry-grow"), 3, true));
    ASSERT_TRUE(r) << r.error().code.message();
    EXPECT_EQ(this->run(this->topics().describe(topic_name("dry-grow")))->partitions, 1);
}

TYPED_TEST(TopicsContract, CreatePartitionsRefusesNoIncreaseAndUnknownTopic) {
    this->create_topic("fixed", 3);
    for (std::int32_t total : {3, 2}) {
        auto r = this->run(this->topics().create_partitions(topic_name("fixed"), total, false));
        ASSERT_FALSE(r) << total;
        EXPECT_EQ(api::reason(r.error().code), api::errc::invalid_partitions) << total;
    }
    EXPECT_EQ(this->run(this->topics().describe(topic_name("fixed")))->partitions, 3);
    auto unknown = this->run(this->topics().create_partitions(topic_name("nope"), 4, false));
    ASSERT_FALSE(unknown);
    EXPECT_EQ(api::reason(unknown.error().code), api::errc::unknown_topic_or_partition);
}

TYPED_TEST(TopicsContract, DescribeConfigsOfUnknownTopicFails) {
    auto r = this->run(this->topics().describe_configs(topic_name("nope")));
    ASSERT_FALSE(r);
    EXPECT_EQ(api::reason(r.error().code), api::errc::unknown_topic_or_partition);
}

TYPED_TEST(TopicsContract, ReplaceConfigsSetsExactlyTheGivenOverrides) {
    this->create_topic("replaced", 1, {{"retention.ms", "1000"}});
    std::map<std::string, std::string> next{{"segment.ms", "60000"}};
    auto r = this->run(this->topics().replace_configs(topic_name("replaced"), next, false));
    ASSERT_TRUE(r) << r.error().code.message();
    auto d = this->run(this->topics().describe(topic_name("replaced")));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->overrides, next);
    EXPECT_NE(this->config_of("replaced", "retention.ms")->source,
              api::config_source::dynamic_topic);
    EXPECT_EQ(this->config_of("replaced", "segment.ms")->value, "60000");
}

TYPED_TEST(TopicsContract, ReplaceConfigsValidateOnlyChangesNothing) {
    this->create_topic("kept", 1, {{"retention.ms", "1000"}});
    auto r = this->run(
        this->topics().replace_configs(topic_name("kept"), {{"retention.ms", "2000"}}, true));
    ASSERT_TRUE(r);
    EXPECT_EQ(this->config_of("kept", "retention.ms")->value, "1000");
}

TYPED_TEST(TopicsContract, AlterConfigsSetsAndRemovesOneKey) {
    this->create_topic("altered", 1, {{"retention.ms", "1000"}, {"segment.ms", "60000"}});
    std::vector<api::config_change> changes;
    changes.push_back({"retention.ms", api::config_change::op::set, std::string("5000")});
    changes.push_back({"segment.ms", api::config_change::op::remove, std::nullopt});
    auto r = this->run(this->topics().alter_configs(topic_name("altered"), changes, false));
    ASSERT_TRUE(r) << r.error().code.message();
    auto d = this->run(this->topics().describe(topic_name("altered")));
    EXPECT_EQ(d->overrides, (std::map<std::string, std::string>{{"retention.ms", "5000"}}));
    EXPECT_EQ(this->config_of("altered", "retention.ms")->source,
              api::config_source::dynamic_topic);
    EXPECT_NE(this->config_of("altered", "segment.ms")->source,
              api::config_source::dynamic_topic);
}

TYPED_TEST(TopicsContract, AlterConfigsRefusesABadValueAndKeepsTheOld) {
    this->create_topic("strict", 1, {{"retention.ms", "1000"}});
    std::vector<api::config_change> changes;
    changes.push_back({"retention.ms", api::config_change::op::set, std::string("never")});
    auto r = this->run(this->topics().alter_configs(topic_name("strict"), changes, false));
    ASSERT_FALSE(r);
    EXPECT_EQ(api::reason(r.error().code), api::errc::invalid_config);
    EXPECT_EQ(this->config_of("strict", "retention.ms")->value, "1000");
}

TYPED_TEST(TopicsContract, AlterConfigsOfUnknownTopicFails) {
    std::vector<api::config_change> changes;
    changes.push_back({"retention.ms", api::config_change::op::set, std::string("1000")});
    auto r = this->run(this->topics().alter_configs(topic_name("nope"), changes, false));
    ASSERT_FALSE(r);
    EXPECT_EQ(api::reason(r.error().code), api::errc::unknown_topic_or_partition);
}

TYPED_TEST(TopicsContract, TopicsSurviveReopening) {
    this->create_topic("durable", 3, {{"retention.ms", "7000"}});
    this->reopen();
    auto d = this->run(this->topics().describe(topic_name("durable")));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->partitions, 3);
    EXPECT_EQ(d->overrides.at("retention.ms"), "7000");
}

TYPED_TEST(TopicsContract, PartitionStatesShowEveryPartition) {
    this->create_topic("states", 2);
    this->produce_values("states", 1, {"a", "b"});
    auto states = this->topics().partition_states();
    int seen = 0;
    for (const auto& s : states) {
        if (s.topic.value != "states") {
            continue;
        }
        ++seen;
        EXPECT_EQ(s.high_watermark.value, s.partition.value == 1 ? 2 : 0);
    }
    EXPECT_EQ(seen, 2);
}

}  // namespace
}  // namespace sluice::backend::contract
