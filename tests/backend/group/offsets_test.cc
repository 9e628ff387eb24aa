// Committed offsets: validation against generations, fetch forms, durability and replay,
// deletion, retention; the record encoding of __consumer_offsets.
#include "backend/group/group_records.h"
#include "backend/log/partition_log.h"
#include "tests/backend/group/group_test_support.h"
#include "tests/backend/support.h"

namespace sluice::backend::group::test {
namespace {

TEST_F(GroupTest, SimpleConsumerCommitsWithoutAGroup) {
    auto r = commit("simple", -1, "", {{0, 10}, {1, 20}});
    EXPECT_FALSE(r.topics[0].partitions[0].error);
    EXPECT_EQ(committed("simple", 0), 10);
    EXPECT_EQ(committed("simple", 1), 20);
    EXPECT_EQ(committed("simple", 2), -1);
    EXPECT_EQ(committed("never", 0), -1);
}

TEST_F(GroupTest, CommitsFromStaleGenerationsAreRejected) {
    auto [member, gen] = stable_single("g");
    EXPECT_FALSE(commit("g", gen, member, {{0, 5}}).topics[0].partitions[0].error);
    EXPECT_EQ(commit("g", gen - 1, member, {{0, 6}}).topics[0].partitions[0].error,
              errc::illegal_generation);
    EXPECT_EQ(commit("g", gen, "ghost", {{0, 6}}).topics[0].partitions[0].error,
              errc::unknown_member_id);
    // Without a generation the group must be empty.
    EXPECT_EQ(commit("g", -1, "", {{0, 6}}).topics[0].partitions[0].error,
              errc::unknown_member_id);
    // Unknown group with a generation: v9 GROUP_ID_NOT_FOUND, before ILLEGAL_GENERATION.
    EXPECT_EQ(commit("nope", 3, "m", {{0, 1}}, "t", 9).topics[0].partitions[0].error,
              errc::group_id_not_found);
    EXPECT_EQ(commit("nope", 3, "m", {{0, 1}}, "t", 8).topics[0].partitions[0].error,
              errc::illegal_generation);
    EXPECT_EQ(committed("g", 0), 5);
}

TEST_F(GroupTest, CommitDuringSyncIsRebalanceInProgress) {
    auto a = join_new("g");
    auto b = join_new("g");
    // b joined during the initial delay: the delay starts once more (up to the rebalance
    // timeout), as in Kafka.
    advance(cfg.initial_rebalance_delay_ms);
    advance(cfg.initial_rebalance_delay_ms);
    EXPECT_EQ(commit("g", 1, a.get().member_id, {{0, 1}}).topics[0].partitions[0].error,
              errc::rebalance_in_progress);
}

TEST_F(GroupTest, CommitChecksPartitionsAndMetadata) {
    offset_commit_request r;
    r.group_id = group_id("g");
    r.api_version = 8;
    r.topics.push_back({topic_name("t"),
                        {{partition_id(0), offset(1), -1, std::string(5000, 'x')},
                         {partition_id(9), offset(1), -1, {}}}});
    r.topics.push_back({topic_name("missing"), {{partition_id(0), offset(1), -1, {}}}});
    auto res = coord->commit_offsets_now(r);
    EXPECT_EQ(res.topics[0].partitions[0].error, errc::offset_metadata_too_large);
    EXPECT_EQ(res.topics[0].partitions[1].error, errc::unknown_topic_or_partition);
    EXPECT_EQ(res.topics[1].partitions[0].error, errc::unknown_topic_or_partition);
}

TEST_F(GroupTest, FetchAllPartitionsAndSeveralGroups) {
    commit("a", -1, "", {{0, 1}, {3, 4}});
    commit("b", -1, "", {{1, 7}}, "u");
    offset_fetch_request all_a;
    all_a.group_id = group_id("a");
    offset_fetch_request some_b;
    some_b.group_id = group_id("b");
    some_b.topics = std::vector<topic_partition_list>{{topic_name("u"), parts({0, 1})}};
    auto res = coord->fetch_offsets_now({all_a, some_b});
    ASSERT_EQ(res.size(), 2u);
    ASSERT_EQ(res[0].topics.size(), 1u);
    EXPECT_EQ(res[0].topics[0].topic, topic_name("t"));
    ASSERT_EQ(res[0].topics[0].partitions.size(), 2u);
    EXPECT_EQ(res[0].topics[0].partitions[1].committed, offset(4));
    EXPECT_EQ(res[0].topics[0].partitions[1].metadata, "meta");
    EXPECT_EQ(res[1].topics[0].partitions[0].committed, offset(-1));
    EXPECT_EQ(res[1].topics[0].partitions[1].committed, offset(7));
}

TEST_F(GroupTest, OffsetsAndGroupsSurviveARestart) {
    auto [member, gen] = stable_single("g");
    commit("g", gen, member, {{0, 100}, {5, 500}});
    commit("simple", -1, "", {{2, 7}});
    commit("gone", -1, "", {{2, 9}});
    ASSERT_FALSE(coord->delete_groups_now({group_id("gone")})[0].error);
    restart();
    EXPECT_EQ(committed("g", 0), 100);
    EXPECT_EQ(committed("g", 5), 500);
    EXPECT_EQ(committed("simple", 2), 7);
    EXPECT_EQ(committed("gone", 2), -1);
    // The classic group came back Stable with its member and generation.
    EXPECT_FALSE(beat("g", member, gen));
    auto d = coord->describe_groups_now({group_id("g")});
    EXPECT_EQ(d[0].state, "Stable");
    ASSERT_EQ(d[0].members.size(), 1u);
    EXPECT_EQ(d[0].members[0].assignment, assignment("t", {0, 1, 2, 3, 4, 5}));
    // ... and its member expires if it does not come back.
    advance(10001);
    EXPECT_EQ(beat("g", member, gen), errc::unknown_member_id);
}

TEST_F(GroupTest, FlushedCommitsSurviveACrash) {
    commit("g", -1, "", {{0, 11}});
    auto err = sluice::backend::test::run_until_done(coord->flush_group(group_id("g")));
    ASSERT_FALSE(err);
    coord->stop();
    coord.reset();
    auto crashed = fs->crash_copy();
    log.reset();  // abandon the old log as a crash would (its files live on in `fs`)
    fs = crashed;
    open_log();
    start();
    EXPECT_EQ(committed("g", 0), 11);
}

TEST_F(GroupTest, DeleteGroups) {
    auto [member, gen] = stable_single("busy");
    commit("idle", -1, "", {{0, 1}});
    auto res = coord->delete_groups_now({group_id("busy"), group_id("idle"), group_id("nope")});
    EXPECT_EQ(res[0].error, errc::non_empty_group);
    EXPECT_FALSE(res[1].error);
    EXPECT_EQ(res[2].error, errc::group_id_not_found);
    EXPECT_EQ(committed("idle", 0), -1);
    EXPECT_TRUE(coord->list_groups_now({}, {}).size() == 1);
}

TEST_F(GroupTest, OffsetDeleteRefusesSubscribedTopics) {
    auto [member, gen] = stable_single("g");  // subscribed to "t"
    commit("g", gen, member, {{0, 1}});
    commit("g", gen, member, {{0, 2}}, "u");
    auto res = coord->delete_offsets_now(
        group_id("g"), {{topic_name("t"), parts({0})}, {topic_name("u"), parts({0, 1})}});
    EXPECT_FALSE(res.error);
    EXPECT_EQ(res.topics[0].partitions[0].error, errc::group_subscribed_to_topic);
    EXPECT_FALSE(res.topics[1].partitions[0].error);
    EXPECT_EQ(committed("g", 0, "u"), -1);
    EXPECT_EQ(committed("g", 0, "t"), 1);
    EXPECT_EQ(coord->delete_offsets_now(group_id("nope"), {{topic_name("t"), parts({0})}}).error,
              errc::group_id_not_found);
}

TEST_F(GroupTest, EmptyGroupOffsetsExpireAfterRetention) {
    cfg.offsets_retention_ms = 60000;
    cfg.offsets_retention_check_interval_ms = 1000;
    restart();
    auto [member, gen] = stable_single("g");
    commit("g", gen, member, {{0, 3}});
    commit("simple", -1, "", {{1, 4}});
    for (int i = 0; i < 20; ++i) {  // 60 s with a live member
        advance(3000);
        ASSERT_FALSE(beat("g", member, gen));
    }
    EXPECT_EQ(committed("simple", 1), -1);  // a simple group's offsets age from their commit
    EXPECT_EQ(committed("g", 0), 3);        // a group with members keeps its offsets
    ASSERT_FALSE(
        coord->leave_group_now(group_id("g"), {{member, std::nullopt, std::nullopt}}).error);
    advance(30000);
    EXPECT_EQ(committed("g", 0), 3);  // empty for 30 s only
    advance(30000);
    EXPECT_EQ(committed("g", 0), -1);
    EXPECT_TRUE(coord->list_groups_now({}, {}).empty());
}

TEST_F(GroupTest, ViewShowsLag) {
    auto part = log->partition("t", partition_id(0));
    ASSERT_TRUE(part);
    for (int i = 0; i < 3; ++i) {
        auto batch = sluice::backend::test::make_batch(5, 10, now);
        log::append_options o;
        o.now_ms = now;
        ASSERT_TRUE(part->append(batch, o));
    }
    commit("g", -1, "", {{0, 6}});
    auto v = coord->view_group(group_id("g"));
    ASSERT_TRUE(v);
    ASSERT_EQ(v->offsets.size(), 1u);
    EXPECT_EQ(v->offsets[0].log_end, offset(15));
    EXPECT_EQ(v->offsets[0].lag, 9);
    EXPECT_FALSE(coord->view_group(group_id("none")));
}

TEST_F(GroupTest, TransactionalCommitsAreCheckedLikeKip447AndStoredOnCommit) {
    auto a = join_new("g");
    auto b = join_new("g");
    advance(cfg.initial_rebalance_delay_ms);
    advance(cfg.initial_rebalance_delay_ms);
    const std::string member = a.get().member_id;
    // Unlike OffsetCommit, a rebalancing group still takes a transactional commit.
    EXPECT_FALSE(coord->validate_txn_commit(group_id("g"), member, std::nullopt, 1));
    EXPECT_EQ(coord->validate_txn_commit(group_id("g"), member, std::nullopt, 2),
              errc::illegal_generation);
    EXPECT_EQ(coord->validate_txn_commit(group_id("g"), "ghost", std::nullopt, 1),
              errc::unknown_member_id);
    EXPECT_FALSE(coord->validate_txn_commit(group_id("g"), "", std::nullopt, -1));
    EXPECT_EQ(coord->validate_txn_commit(group_id("nope"), "m", std::nullopt, 3),
              errc::illegal_generation);

    auto err = sluice::backend::test::run_until_done(coord->commit_txn_offsets(
        group_id("g"), {{topic_name("t"), {{partition_id(0), offset(77), -1, std::nullopt}}}}));
    EXPECT_FALSE(err);
    EXPECT_EQ(committed("g", 0), 77);
}

TEST_F(GroupTest, RequireStableFetchSeesPendingTransactionalOffsets) {
    coord->set_pending_txn_offsets([](const group_id& g, const topic_name& t, partition_id p) {
        return g.value == "g" && t.value == "t" && p.value == 1;
    });
    commit("g", -1, "", {{0, 5}, {1, 6}});
    offset_fetch_request r;
    r.group_id = group_id("g");
    r.require_stable = true;
    r.topics = std::vector<topic_partition_list>{{topic_name("t"), parts({0, 1})}};
    auto res = coord->fetch_offsets_now({r});
    EXPECT_FALSE(res[0].topics[0].partitions[0].error);
    EXPECT_EQ(res[0].topics[0].partitions[1].error, errc::unstable_offset_commit);
    r.require_stable = false;
    EXPECT_EQ(coord->fetch_offsets_now({r})[0].topics[0].partitions[1].committed, offset(6));
}

}  // namespace
}  // namespace sluice::backend::group::test
