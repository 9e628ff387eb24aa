// backend/upstream's admin against librdkafka's mock cluster (3 brokers): topology, topics,
// offsets and groups as the cluster reports them, and what the 2.0.2 mock cannot do.
#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/backend/upstream/upstream_support.h"

namespace sluice::backend::upstream::test {
namespace {

using namespace std::chrono_literals;

using UpstreamAdmin = UpstreamTest;

std::vector<api::outgoing_record> values_for(std::int32_t partition, int n) {
    std::vector<api::outgoing_record> out;
    for (int i = 0; i < n; ++i) {
        api::outgoing_record r;
        r.value = "v" + std::to_string(i);
        r.partition = partition;
        out.push_back(std::move(r));
    }
    return out;
}

TEST_F(UpstreamAdmin, DescribeClusterShowsThreeBrokersAndAController) {
    auto& client = open();
    auto cluster_info = run(client.admin().describe_cluster());
    ASSERT_TRUE(cluster_info) << cluster_info.error().text();
    ASSERT_EQ(cluster_info->brokers.size(), 3u);
    for (int i = 0; i < 3; ++i) {
        EXPECT_EQ(cluster_info->brokers[i].node_id, i + 1);
        EXPECT_EQ(cluster_info->brokers[i].host, "127.0.0.1");
        EXPECT_GT(cluster_info->brokers[i].port, 0);
    }
    // The 2.0.2 mock answers controller 0 (no broker's id); a cluster names one of its own.
    EXPECT_GE(cluster_info->controller_id, 0);
    EXPECT_LE(cluster_info->controller_id, 3);
    EXPECT_FALSE(cluster_info->cluster_id.empty());
}

/// A log_dirs_reader that notes the brokers it is asked for and answers one replica each, and
/// a failure of its own.
class recording_log_dirs final : public api::log_dirs_reader {
  public:
    api::awaitable<api::log_sizes> read(std::vector<api::broker_info> brokers) override {
        api::log_sizes out;
        for (const auto& b : brokers) {
            asked.push_back(b.node_id);
            out.replicas.push_back({topic_name("t"), partition_id(0), b.node_id,
                                    std::int64_t{100} * b.node_id});
        }
        out.failures.push_back({9, "not answered"});
        co_return out;
    }
    std::vector<std::int32_t> asked;
};

TEST_F(UpstreamAdmin, DescribeLogDirsAsksTheReaderAboutEveryBroker) {
    auto reader = std::make_shared<recording_log_dirs>();
    auto& client = open({}, 10s, reader);
    auto sizes = run(client.admin().describe_log_dirs());
    ASSERT_TRUE(sizes) << sizes.error().text();
    EXPECT_EQ(reader->asked, (std::vector<std::int32_t>{1, 2, 3}));
    ASSERT_EQ(sizes->replicas.size(), 3u);
    EXPECT_EQ(sizes->replicas[2].node_id, 3);
    EXPECT_EQ(sizes->replicas[2].size_bytes, 300);
    ASSERT_EQ(sizes->failures.size(), 1u);
    EXPECT_EQ(sizes->failures[0].reason, "not answered");
}

TEST_F(UpstreamAdmin, DescribeLogDirsWithoutAReaderIsUnsupported) {
    auto& client = open();
    auto sizes = run(client.admin().describe_log_dirs());
    ASSERT_FALSE(sizes);
    EXPECT_EQ(sizes.error().reason(), api::errc::unsupported);
}

TEST_F(UpstreamAdmin, DescribeTopicSpreadsLeadersOverTheBrokers) {
    const auto topic = unique_name("described");
    ASSERT_TRUE(cluster().create_topic(topic, 6));
    auto& client = open();
    auto t = run(client.admin().describe_topic(topic_name(topic)));
    ASSERT_TRUE(t) << t.error().text();
    EXPECT_EQ(t->name.value, topic);
    EXPECT_FALSE(t->internal);
    ASSERT_EQ(t->partitions.size(), 6u);
    std::set<std::int32_t> leaders;
    for (std::int32_t p = 0; p < 6; ++p) {
        const auto& part = t->partitions[p];
        EXPECT_EQ(part.partition.value, p);
        EXPECT_EQ(part.replicas.size(), 3u);
        EXPECT_EQ(part.isr.size(), 3u);
        EXPECT_NE(std::find(part.replicas.begin(), part.replicas.end(), part.leader),
                  part.replicas.end());
        EXPECT_EQ(part.leader, p % 3 + 1);  // as mock_cluster::create_topic placed them
        leaders.insert(part.leader);
    }
    EXPECT_EQ(leaders.size(), 3u);
}

TEST_F(UpstreamAdmin, ListTopicsIsSortedAndHoldsTheTopics) {
    const auto a = unique_name("listed-a");
    const auto b = unique_name("listed-b");
    ASSERT_TRUE(cluster().create_topic(b, 1));
    ASSERT_TRUE(cluster().create_topic(a, 2));
    auto& client = open();
    auto topics = run(client.admin().list_topics());
    ASSERT_TRUE(topics) << topics.error().text();
    EXPECT_TRUE(std::is_sorted(topics->begin(), topics->end(),
                               [](const auto& x, const auto& y) { return x.name < y.name; }));
    auto find = [&](const std::string& n) {
        return std::find_if(topics->begin(), topics->end(),
                            [&](const auto& t) { return t.name.value == n; });
    };
    ASSERT_NE(find(a), topics->end());
    ASSERT_NE(find(b), topics->end());
    EXPECT_EQ(find(a)->partitions.size(), 2u);
}

TEST_F(UpstreamAdmin, ListOffsetsEarliestLatestAndByTimestamp) {
    const auto topic = unique_name("offsets");
    ASSERT_TRUE(cluster().create_topic(topic, 2));
    auto& client = open();
    auto records = values_for(0, 3);
    for (int i = 0; i < 3; ++i) {
        records[i].timestamp = 1'000'000 + i * 1000;
    }
    ASSERT_TRUE(run(client.producer().send(topic_name(topic), records, {})));

    using kind = api::offset_spec::kind;
    auto q = [&](std::int32_t p, kind k, std::int64_t ts = -1) {
        return api::offset_query{topic_name(topic), partition_id(p), api::offset_spec{k, ts}};
    };
    auto found = run(client.admin().list_offsets(
        {q(0, kind::earliest), q(0, kind::latest), q(1, kind::latest),
         q(0, kind::timestamp, 1'001'000), q(0, kind::timestamp, 9'000'000), q(7, kind::latest),
         q(0, kind::max_timestamp)},
        api::isolation::read_uncommitted));
    ASSERT_EQ(found.size(), 7u);
    for (int i = 0; i < 5; ++i) {
        EXPECT_FALSE(found[i].error) << i << ": " << found[i].error.text();
    }
    EXPECT_EQ(found[0].off.value, 0);
    EXPECT_EQ(found[1].off.value, 3);
    EXPECT_EQ(found[2].off.value, 0);
    // The 2.0.2 mock does not look offsets up by timestamp: it answers -1 (no such record).
    EXPECT_TRUE(found[3].off.value == 1 || found[3].off.value == -1) << found[3].off.value;
    EXPECT_EQ(found[4].off.value, -1);  // no record at or after that time
    EXPECT_EQ(found[5].error.reason(), api::errc::unknown_topic_or_partition);
    EXPECT_EQ(found[6].error.reason(), api::errc::unsupported);
}

TEST_F(UpstreamAdmin, GroupsAreListedAndDescribedWithMembersAndLag) {
    const auto topic = unique_name("grouped");
    const auto group = unique_name("group");
    ASSERT_TRUE(cluster().create_topic(topic, 1));
    auto& client = open();
    ASSERT_TRUE(run(client.producer().send(topic_name(topic), values_for(0, 5), {})));

    group_member member(cluster().bootstrap(), group, topic);
    ASSERT_TRUE(member.wait_for_assignment());
    ASSERT_TRUE(member.commit(0, 2));

    // (By partition: the 2.0.2 mock's OffsetFetch does not answer "every partition".)
    auto committed = run(
        client.admin().committed_offsets(group_id(group), {{topic_name(topic), partition_id(0)}}));
    ASSERT_TRUE(committed) << committed.error().text();
    ASSERT_EQ(committed->size(), 1u);
    EXPECT_EQ((*committed)[0].tp.topic.value, topic);
    EXPECT_EQ((*committed)[0].next.value, 2);

    auto groups = run(client.admin().list_groups());
    if (!groups && groups.error().reason() == api::errc::unsupported) {
        // Not describe_group either: librdkafka 2.0.2's rd_kafka_destroy hangs after a
        // DescribeConsumerGroups that a broker without DescribeGroups refused.
        GTEST_SKIP() << "the librdkafka 2.0.2 mock has no ListGroups and DescribeGroups";
    }
    ASSERT_TRUE(groups) << groups.error().text();
    auto it = std::find_if(groups->begin(), groups->end(),
                           [&](const auto& g) { return g.group_id.value == group; });
    ASSERT_NE(it, groups->end());
    EXPECT_EQ(it->protocol_type, "consumer");

    auto view = run(client.admin().describe_group(group_id(group)));
    ASSERT_TRUE(view) << view.error().text();
    EXPECT_EQ(view->state, "Stable");
    ASSERT_EQ(view->members.size(), 1u);
    EXPECT_EQ(view->members[0].client_id, "plain-member");
    ASSERT_EQ(view->members[0].assignment.size(), 1u);
    EXPECT_EQ(view->members[0].assignment.begin()->first.value, topic);
    ASSERT_EQ(view->offsets.size(), 1u);
    EXPECT_EQ(view->offsets[0].committed.value, 2);
    EXPECT_EQ(view->offsets[0].log_end.value, 5);
    EXPECT_EQ(view->offsets[0].lag, 3);

    auto unknown = run(client.admin().describe_group(group_id(unique_name("nobody"))));
    ASSERT_FALSE(unknown);
    EXPECT_EQ(unknown.error().reason(), api::errc::group_id_not_found);
}

TEST_F(UpstreamAdmin, AlterCommittedOffsetsOfAnEmptyGroup) {
    const auto topic = unique_name("altered");
    const auto group = unique_name("empty-group");
    ASSERT_TRUE(cluster().create_topic(topic, 2));
    auto& client = open();
    api::offset_commit c{{topic_name(topic), partition_id(1)}, offset(7), "meta"};
    auto altered = run(client.admin().alter_committed_offsets(group_id(group), {c}));
    ASSERT_TRUE(altered) << altered.error().text();
    auto committed = run(
        client.admin().committed_offsets(group_id(group), {{topic_name(topic), partition_id(1)}}));
    ASSERT_TRUE(committed) << committed.error().text();
    ASSERT_EQ(committed->size(), 1u);
    EXPECT_EQ((*committed)[0].next.value, 7);
    EXPECT_EQ((*committed)[0].metadata, "meta");
}

// What the librdkafka 2.0.2 mock lacks answers as a clear error, not a hang.
TEST_F(UpstreamAdmin, RequestsTheMockLacksFailWithinTheDeadline) {
    auto& client = open({}, 3s);
    api::new_topic spec;
    spec.name = topic_name(unique_name("created"));
    spec.partitions = 2;
    const auto start = std::chrono::steady_clock::now();
    auto created = run(client.admin().create_topic(spec));
    ASSERT_FALSE(created);  // the 2.0.2 mock has no CreateTopics
    EXPECT_LT(std::chrono::steady_clock::now() - start, 6s);
}

}  // namespace
}  // namespace sluice::backend::upstream::test
