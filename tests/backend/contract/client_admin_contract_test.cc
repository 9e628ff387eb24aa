// Client-level contract: admin (backend/api/client.h api::admin). Topics (create, validate
// only, duplicates, describe, list, delete, more partitions), configs, offsets (ListOffsets,
// DeleteRecords), the cluster's topology and consumer groups (list, describe with lag,
// committed offsets, altering them from outside, delete). Tests may share a cluster: every
// topic and group name is unique.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tests/backend/contract/client_backends.h"

namespace sluice::backend::contract {
namespace {

struct admin_suite_names {
    template <typename F>
    static std::string GetName(int) {
        return std::string(F::name);
    }
};

template <typename F>
class ClientAdminContract : public ClientContract<F> {
protected:
    api::backend_result<api::topic_info> create(const std::string& name, std::int32_t partitions,
                                                std::map<std::string, std::string> configs = {},
                                                bool validate_only = false) {
        api::new_topic spec{topic_name(name), partitions, std::move(configs), validate_only};
        return this->run(this->admin().create_topic(std::move(spec)));
    }

    std::string make_topic(std::string_view stem, std::int32_t partitions) {
        auto name = this->unique_topic(stem);
        auto created = create(name, partitions);
        if (!created) {
            ADD_FAILURE() << "create " << name << ": " << created.error().text();
        }
        return name;
    }

    /// Produces `timestamps.size()` records to partition 0 with these timestamps.
    void fill(const std::string& topic, std::vector<std::int64_t> timestamps) {
        std::vector<api::outgoing_record> recs;
        for (auto ts : timestamps) {
            api::outgoing_record r;
            r.partition = 0;
            r.value = "v";
            r.timestamp = ts;
            recs.push_back(std::move(r));
        }
        auto sent = this->run(this->producer().send(topic_name(topic), std::move(recs), {}));
        ASSERT_TRUE(sent) << sent.error().text();
        for (const auto& d : *sent) {
            ASSERT_FALSE(d.error) << d.error.text();
        }
    }

    api::found_offset find(const std::string& topic, std::int32_t p, api::offset_spec spec) {
        std::vector<api::offset_query> q{{topic_name(topic), partition_id(p), spec}};
        return this->run(
                       this->admin().list_offsets(std::move(q), api::isolation::read_uncommitted))
            .at(0);
    }

    std::optional<std::string> config_value(const std::string& topic, const std::string& name) {
        auto all = this->run(this->admin().describe_topic_configs(topic_name(topic)));
        if (!all) {
            return std::nullopt;
        }
        for (const auto& e : *all) {
            if (e.name == name) {
                return e.value;
            }
        }
        return std::nullopt;
    }

    std::string unique_group(std::string_view stem) { return this->unique_topic(stem); }
};
TYPED_TEST_SUITE(ClientAdminContract, client_factories, admin_suite_names);

// --- topics ----------------------------------------------------------------------------------

TYPED_TEST(ClientAdminContract, CreateAnswersTheTopicAndDescribeFindsIt) {
    auto name = this->unique_topic("created");
    auto created = this->create(name, 3);
    ASSERT_TRUE(created) << created.error().text();
    EXPECT_EQ(created->name.value, name);
    ASSERT_EQ(created->partitions.size(), 3u);

    auto d = this->run(this->admin().describe_topic(topic_name(name)));
    ASSERT_TRUE(d) << d.error().text();
    EXPECT_FALSE(d->internal);
    ASSERT_EQ(d->partitions.size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        const auto& p = d->partitions[i];
        EXPECT_EQ(p.partition.value, static_cast<std::int32_t>(i));
        EXPECT_GE(p.leader, 0);
        EXPECT_FALSE(p.replicas.empty());
        EXPECT_NE(std::find(p.isr.begin(), p.isr.end(), p.leader), p.isr.end());
    }
}

TYPED_TEST(ClientAdminContract, ValidateOnlyCreatesNothing) {
    auto name = this->unique_topic("validated");
    auto checked = this->create(name, 2, {}, true);
    ASSERT_TRUE(checked) << checked.error().text();
    auto d = this->run(this->admin().describe_topic(topic_name(name)));
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().reason(), api::errc::unknown_topic_or_partition);
    // A bad spec fails validation too.
    auto bad = this->create(name, 0, {}, true);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().reason(), api::errc::invalid_partitions);
}

TYPED_TEST(ClientAdminContract, CreatingAnExistingTopicFails) {
    auto name = this->make_topic("twice", 1);
    auto again = this->create(name, 1);
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().reason(), api::errc::topic_already_exists);
}

TYPED_TEST(ClientAdminContract, BadTopicSpecsFail) {
    auto bad_name = this->create("bad name!", 1);
    ASSERT_FALSE(bad_name);
    EXPECT_EQ(bad_name.error().reason(), api::errc::invalid_topic_name);
    if (auto why = stand_in_lacks<TypeParam>("topic_configs"); !why.empty()) {
        GTEST_SKIP() << why;
    }
    auto bad_config = this->create(this->unique_topic("badcfg"), 1, {{"no.such.config", "1"}});
    ASSERT_FALSE(bad_config);
    EXPECT_EQ(bad_config.error().reason(), api::errc::invalid_config);
}

TYPED_TEST(ClientAdminContract, ListTopicsIsSortedAndFlagsInternalTopics) {
    auto a = this->make_topic("list-b", 1);
    auto b = this->make_topic("list-a", 2);
    auto all = this->run(this->admin().list_topics());
    ASSERT_TRUE(all) << all.error().text();
    EXPECT_TRUE(std::is_sorted(all->begin(), all->end(), [](const auto& x, const auto& y) {
        return x.name.value < y.name.value;
    }));
    int seen = 0;
    for (const auto& t : *all) {
        if (t.name.value == a || t.name.value == b) {
            ++seen;
            EXPECT_FALSE(t.internal);
            EXPECT_EQ(t.partitions.size(), t.name.value == a ? 1u : 2u);
        }
        if (t.name.value == "__consumer_offsets" || t.name.value == "__transaction_state") {
            EXPECT_TRUE(t.internal) << t.name.value;
        }
    }
    EXPECT_EQ(seen, 2);
}

TYPED_TEST(ClientAdminContract, DescribeOfAnUnknownTopicFails) {
    auto d = this->run(this->admin().describe_topic(topic_name(this->unique_topic("nothing"))));
    ASSERT_FALSE(d);
    EXPECT_EQ(d.error().reason(), api::errc::unknown_topic_or_partition);
}

TYPED_TEST(ClientAdminContract, DeleteRemovesTheTopic) {
    if (auto why = stand_in_lacks<TypeParam>("delete_topics"); !why.empty()) {
        GTEST_SKIP() << why;
    }
    auto name = this->make_topic("deleted", 1);
    auto done = this->run(this->admin().delete_topic(topic_name(name)));
    ASSERT_TRUE(done) << done.error().text();
    auto d = this->run(this->admin().describe_topic(topic_name(name)));
    ASSERT_FALSE(d);
    auto again = this->run(this->admin().delete_topic(topic_name(name)));
    ASSERT_FALSE(again);
    EXPECT_EQ(again.error().reason(), api::errc::unknown_topic_or_partition);
}

TYPED_TEST(ClientAdminContract, CreatePartitionsGrowsTheTopicOnly) {
    if (auto why = stand_in_lacks<TypeParam>("create_partitions"); !why.empty()) {
        GTEST_SKIP() << why;
    }
    auto name = this->make_topic("grown", 2);
    auto grown = this->run(this->admin().create_partitions(topic_name(name), 5));
    ASSERT_TRUE(grown) << grown.error().text();
    auto d = this->run(this->admin().describe_topic(topic_name(name)));
    ASSERT_TRUE(d);
    EXPECT_EQ(d->partitions.size(), 5u);
    auto count = this->run(this->producer().partitions(topic_name(name)));
    ASSERT_TRUE(count);
    EXPECT_EQ(*count, 5);
    auto shrink = this->run(this->admin().create_partitions(topic_name(name), 3));
    ASSERT_FALSE(shrink);
    EXPECT_EQ(shrink.error().reason(), api::errc::invalid_partitions);
    auto unknown =
        this->run(this->admin().create_partitions(topic_name(this->unique_topic("none")), 3));
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().reason(), api::errc::unknown_topic_or_partition);
}

// --- configs ---------------------------------------------------------------------------------

TYPED_TEST(ClientAdminContract, TopicConfigsAreDescribedAndAltered) {
    if (auto why = stand_in_lacks<TypeParam>("topic_configs"); !why.empty()) {
        GTEST_SKIP() << why;
    }
    auto name = this->unique_topic("configured");
    ASSERT_TRUE(this->create(name, 1, {{"retention.ms", "3600000"}}));
    auto all = this->run(this->admin().describe_topic_configs(topic_name(name)));
    ASSERT_TRUE(all) << all.error().text();
    auto it = std::find_if(all->begin(), all->end(),
                           [](const auto& e) { return e.name == "retention.ms"; });
    ASSERT_NE(it, all->end());
    EXPECT_EQ(it->value, "3600000");
    EXPECT_EQ(it->source, api::config_source::dynamic_topic);
    EXPECT_TRUE(std::any_of(all->begin(), all->end(),
                            [](const auto& e) { return e.name == "cleanup.policy"; }));

    std::vector<api::config_change> validate{
        {"retention.ms", api::config_change::op::set, std::string("1000")}};
    ASSERT_TRUE(this->run(
        this->admin().alter_topic_configs(topic_name(name), std::move(validate), true)));
    EXPECT_EQ(this->config_value(name, "retention.ms"), "3600000");

    std::vector<api::config_change> set{
        {"retention.ms", api::config_change::op::set, std::string("7200000")},
        {"cleanup.policy", api::config_change::op::set, std::string("compact")}};
    auto altered =
        this->run(this->admin().alter_topic_configs(topic_name(name), std::move(set), false));
    ASSERT_TRUE(altered) << altered.error().text();
    EXPECT_EQ(this->config_value(name, "retention.ms"), "7200000");
    EXPECT_EQ(this->config_value(name, "cleanup.policy"), "compact");

    std::vector<api::config_change> bad{
        {"retention.ms", api::config_change::op::set, std::string("soon")}};
    auto refused =
        this->run(this->admin().alter_topic_configs(topic_name(name), std::move(bad), false));
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().reason(), api::errc::invalid_config);

    auto unknown = this->run(
        this->admin().describe_topic_configs(topic_name(this->unique_topic("nocfg"))));
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().reason(), api::errc::unknown_topic_or_partition);
}

// --- topology --------------------------------------------------------------------------------

TYPED_TEST(ClientAdminContract, DescribeClusterNamesItsBrokersAndController) {
    auto c = this->run(this->admin().describe_cluster());
    ASSERT_TRUE(c) << c.error().text();
    EXPECT_FALSE(c->cluster_id.empty());
    ASSERT_FALSE(c->brokers.empty());
    EXPECT_TRUE(std::is_sorted(c->brokers.begin(), c->brokers.end(),
                               [](const auto& a, const auto& b) { return a.node_id < b.node_id; }));
    if (stand_in_lacks<TypeParam>("controller").empty()) {
        EXPECT_TRUE(std::any_of(c->brokers.begin(), c->brokers.end(),
                                [&](const auto& b) { return b.node_id == c->controller_id; }));
    }
    for (const auto& b : c->brokers) {
        EXPECT_FALSE(b.host.empty());
        EXPECT_GT(b.port, 0);
    }
    // Every partition's leader is one of them.
    auto name = this->make_topic("led", 2);
    auto d = this->run(this->admin().describe_topic(topic_name(name)));
    ASSERT_TRUE(d);
    for (const auto& p : d->partitions) {
        EXPECT_TRUE(std::any_of(c->brokers.begin(), c->brokers.end(),
                                [&](const auto& b) { return b.node_id == p.leader; }));
    }
}

TYPED_TEST(ClientAdminContract, BrokerConfigsOfAKnownBrokerOnly) {
    if (auto why = stand_in_lacks<TypeParam>("topic_configs"); !why.empty()) {
        GTEST_SKIP() << why;
    }
    auto c = this->run(this->admin().describe_cluster());
    ASSERT_TRUE(c);
    auto configs = this->run(this->admin().describe_broker_configs(c->brokers.at(0).node_id));
    ASSERT_TRUE(configs) << configs.error().text();
    EXPECT_FALSE(configs->empty());
    auto unknown = this->run(this->admin().describe_broker_configs(987654));
    ASSERT_FALSE(unknown);
}

// --- offsets and records ---------------------------------------------------------------------

TYPED_TEST(ClientAdminContract, ListOffsetsEarliestLatestAndByTime) {
    auto name = this->make_topic("offsets", 1);
    this->fill(name, {1'000'000, 2'000'000, 3'000'000});
    using k = api::offset_spec::kind;
    EXPECT_EQ(this->find(name, 0, {k::earliest, -1}).off.value, 0);
    EXPECT_EQ(this->find(name, 0, {k::latest, -1}).off.value, 3);
    auto missing = this->find(name, 5, {k::latest, -1});
    ASSERT_TRUE(missing.error);
    EXPECT_EQ(missing.error.reason(), api::errc::unknown_topic_or_partition);
    if (auto why = stand_in_lacks<TypeParam>("offsets_by_timestamp"); !why.empty()) {
        GTEST_SKIP() << why;
    }
    auto at = this->find(name, 0, {k::timestamp, 1'500'000});
    EXPECT_FALSE(at.error);
    EXPECT_EQ(at.off.value, 1);
    EXPECT_EQ(at.timestamp, 2'000'000);
    auto after = this->find(name, 0, {k::timestamp, 9'000'000});
    EXPECT_FALSE(after.error);
    EXPECT_EQ(after.off.value, -1);
}

TYPED_TEST(ClientAdminContract, DeleteRecordsMovesTheLogStart) {
    if (auto why = stand_in_lacks<TypeParam>("delete_records"); !why.empty()) {
        GTEST_SKIP() << why;
    }
    auto name = this->make_topic("trimmed", 1);
    this->fill(name, {1000, 2000, 3000, 4000});
    std::vector<api::delete_records_request> reqs{{topic_name(name), partition_id(0), offset(2)}};
    auto done = this->run(this->admin().delete_records(std::move(reqs)));
    ASSERT_EQ(done.size(), 1u);
    ASSERT_TRUE(done[0]) << done[0].error().text();
    EXPECT_EQ(done[0]->value, 2);
    EXPECT_EQ(this->find(name, 0, {api::offset_spec::kind::earliest, -1}).off.value, 2);
    EXPECT_EQ(this->find(name, 0, {api::offset_spec::kind::latest, -1}).off.value, 4);
    std::vector<api::delete_records_request> beyond{
        {topic_name(name), partition_id(0), offset(10)}};
    auto refused = this->run(this->admin().delete_records(std::move(beyond)));
    ASSERT_FALSE(refused.at(0));
    EXPECT_EQ(refused[0].error().reason(), api::errc::offset_out_of_range);
}

// --- groups ----------------------------------------------------------------------------------

TYPED_TEST(ClientAdminContract, GroupOffsetsAlteredFromOutsideAreListedDescribedAndDeleted) {
    auto name = this->make_topic("lagging", 2);
    this->fill(name, {1000, 2000, 3000, 4000, 5000});
    const auto g = group_id(this->unique_group("admin-group"));

    std::vector<api::offset_commit> commits{
        {{topic_name(name), partition_id(0)}, offset(2), std::string("meta")}};
    auto altered = this->run(this->admin().alter_committed_offsets(g, std::move(commits)));
    ASSERT_TRUE(altered) << altered.error().text();

    // Asked by partition: one not committed answers -1.
    std::vector<api::topic_partition> asked{{topic_name(name), partition_id(0)},
                                            {topic_name(name), partition_id(1)}};
    auto some = this->run(this->admin().committed_offsets(g, std::move(asked)));
    ASSERT_TRUE(some);
    ASSERT_EQ(some->size(), 2u);
    EXPECT_EQ((*some)[0].next.value, 2);
    EXPECT_EQ((*some)[1].next.value, -1);
    if (auto why = stand_in_lacks<TypeParam>("all_committed_offsets"); !why.empty()) {
        GTEST_SKIP() << why;
    }
    auto committed = this->run(this->admin().committed_offsets(g, {}));
    ASSERT_TRUE(committed) << committed.error().text();
    ASSERT_EQ(committed->size(), 1u);
    EXPECT_EQ((*committed)[0].tp.topic.value, name);
    EXPECT_EQ((*committed)[0].tp.partition.value, 0);
    EXPECT_EQ((*committed)[0].next.value, 2);
    EXPECT_EQ((*committed)[0].metadata, "meta");
    if (auto why = stand_in_lacks<TypeParam>("group_admin"); !why.empty()) {
        GTEST_SKIP() << why;
    }

    auto listed = this->run(this->admin().list_groups());
    ASSERT_TRUE(listed) << listed.error().text();
    auto it = std::find_if(listed->begin(), listed->end(),
                           [&](const auto& l) { return l.group_id == g; });
    ASSERT_NE(it, listed->end());
    EXPECT_EQ(it->state, "Empty");

    auto view = this->run(this->admin().describe_group(g));
    ASSERT_TRUE(view) << view.error().text();
    EXPECT_EQ(view->state, "Empty");
    EXPECT_TRUE(view->members.empty());
    auto p0 = std::find_if(view->offsets.begin(), view->offsets.end(), [&](const auto& p) {
        return p.topic.value == name && p.partition.value == 0;
    });
    ASSERT_NE(p0, view->offsets.end());
    EXPECT_EQ(p0->committed.value, 2);
    EXPECT_EQ(p0->log_end.value, 5);
    EXPECT_EQ(p0->lag, 3);

    auto deleted = this->run(this->admin().delete_group(g));
    ASSERT_TRUE(deleted) << deleted.error().text();
    auto gone = this->run(this->admin().describe_group(g));
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().reason(), api::errc::group_id_not_found);
    auto none = this->run(this->admin().committed_offsets(g, {}));
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
}

TYPED_TEST(ClientAdminContract, UnknownGroupsAreNotFound) {
    if (auto why = stand_in_lacks<TypeParam>("group_admin"); !why.empty()) {
        GTEST_SKIP() << why;
    }
    const auto g = group_id(this->unique_group("no-group"));
    auto view = this->run(this->admin().describe_group(g));
    ASSERT_FALSE(view);
    EXPECT_EQ(view.error().reason(), api::errc::group_id_not_found);
    auto deleted = this->run(this->admin().delete_group(g));
    ASSERT_FALSE(deleted);
    EXPECT_EQ(deleted.error().reason(), api::errc::group_id_not_found);
}

}  // namespace
}  // namespace sluice::backend::contract
