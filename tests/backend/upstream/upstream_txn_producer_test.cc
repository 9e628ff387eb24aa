// backend/upstream's transactional producer (api::transactional_producer) over the mock
// cluster: committed transactions reach the partition; a second producer of the same
// transactional.id takes it over; a commit that outlasted its call's wait is ended by the next
// transaction instead of wedging the producer.
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backend/api/errc.h"
#include "tests/backend/upstream/upstream_support.h"

namespace sluice::backend::upstream::test {
namespace {

using namespace std::chrono_literals;
using UpstreamTxnProducer = UpstreamTest;

std::vector<api::outgoing_record> txn_records(const std::string& prefix, int n) {
    std::vector<api::outgoing_record> out;
    for (int i = 0; i < n; ++i) {
        api::outgoing_record r;
        r.key = prefix + "-k" + std::to_string(i);
        r.value = prefix + "-v" + std::to_string(i);
        r.partition = 0;
        out.push_back(std::move(r));
    }
    return out;
}

TEST_F(UpstreamTxnProducer, CommittedTransactionsReachThePartition) {
    auto& client = open();
    const auto t = unique_name("txn");
    ASSERT_TRUE(cluster().create_topic(t, 1));
    auto p = client.open_transactional_producer(t + "-id");
    ASSERT_TRUE(p);
    ASSERT_TRUE(run(p->init(10s)));
    ASSERT_TRUE(run(p->send_committed(topic_name(t), txn_records("a", 3), 10s)));
    ASSERT_TRUE(run(p->send_committed(topic_name(t), txn_records("b", 2), 10s)));
    const auto got = read_partition(cluster().bootstrap(), t, 0, 5);
    ASSERT_EQ(got.size(), 5u);
    EXPECT_EQ(got[0].value, "a-v0");
    EXPECT_EQ(got[3].value, "b-v0");
}

TEST_F(UpstreamTxnProducer, ASecondProducerOfTheIdTakesItOver) {
    // librdkafka 2.0.2's mock bumps the epoch but does not refuse the older producer's
    // writes: the refusal itself is checked against a native sluice, which does
    // (tests/integration/test_sqs_fleet.py).
    auto& client = open();
    const auto t = unique_name("fence");
    ASSERT_TRUE(cluster().create_topic(t, 1));
    auto old_owner = client.open_transactional_producer(t + "-id");
    ASSERT_TRUE(run(old_owner->init(10s)));
    ASSERT_TRUE(run(old_owner->send_committed(topic_name(t), txn_records("old", 1), 10s)));
    auto new_owner = client.open_transactional_producer(t + "-id");
    ASSERT_TRUE(run(new_owner->init(10s)));
    EXPECT_TRUE(run(new_owner->send_committed(topic_name(t), txn_records("new", 2), 10s)));
    EXPECT_EQ(read_partition(cluster().bootstrap(), t, 0, 3).size(), 3u);
}

TEST_F(UpstreamTxnProducer, ACommitThatOutlastedItsWaitIsEndedByTheNextTransaction) {
    // librdkafka goes on with a timed-out commit in the background and refuses to begin
    // another transaction until commit_transaction is called again: the queue state log's
    // writer, whose every retry began a new transaction, failed from then on (the owner of
    // the SQS queues stored nothing more after a cluster restart that outlasted a commit).
    auto& client = open();
    const auto t = unique_name("slowcommit");
    ASSERT_TRUE(cluster().create_topic(t, 1));
    const auto id = t + "-id";
    constexpr std::int32_t coordinator = 2;  // not the partition's leader (broker 1)
    rd_kafka_mock_coordinator_set(cluster().get(), "transaction", id.c_str(), coordinator);
    auto p = client.open_transactional_producer(id);
    ASSERT_TRUE(run(p->init(10s)));
    struct rtt_reset {
        mock_cluster& c;
        ~rtt_reset() { c.set_rtt(coordinator, 0); }
    } reset{cluster()};
    cluster().set_rtt(coordinator, 2500);
    auto slow = run(p->send_committed(topic_name(t), txn_records("a", 1), 1s));
    ASSERT_FALSE(slow) << "the commit outlasts the call's second";
    EXPECT_EQ(api::reason(slow.error().code), api::errc::request_timed_out)
        << slow.error().message;
    cluster().set_rtt(coordinator, 0);
    auto next = run(p->send_committed(topic_name(t), txn_records("b", 1), 20s));
    ASSERT_TRUE(next) << next.error().message;
    const auto got = read_partition(cluster().bootstrap(), t, 0, 2);
    ASSERT_EQ(got.size(), 2u) << "the unfinished commit ended (committed) before the next";
    EXPECT_EQ(got[0].value, "a-v0");
    EXPECT_EQ(got[1].value, "b-v0");
}

}  // namespace
}  // namespace sluice::backend::upstream::test
