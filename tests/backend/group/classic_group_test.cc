// The classic group protocol: joins, the rebalance barrier, sync, heartbeats, leaving,
// timeouts and static membership, on a manual clock.
#include "tests/backend/group/group_test_support.h"

namespace sluice::backend::group::test {
namespace {

TEST_F(GroupTest, JoinWithoutMemberIdIsAskedToRejoinWithOne) {
    auto first = join(join_req("g", ""));
    ASSERT_TRUE(first.done());
    EXPECT_EQ(first.get().error, errc::member_id_required);
    EXPECT_FALSE(first.get().member_id.empty());
    EXPECT_EQ(first.get().member_id.rfind("client-", 0), 0u);

    auto second = join(join_req("g", first.get().member_id));
    EXPECT_FALSE(second.done());  // parked: the initial rebalance delay
    advance(cfg.initial_rebalance_delay_ms);
    ASSERT_TRUE(second.done());
    EXPECT_FALSE(second.get().error);
    EXPECT_EQ(second.get().generation_id, 1);
    EXPECT_EQ(second.get().leader, first.get().member_id);
    EXPECT_EQ(second.get().protocol_name, "range");
    ASSERT_EQ(second.get().members.size(), 1u);
}

TEST_F(GroupTest, OldJoinVersionsGetAMemberIdAtOnce) {
    auto r = join_req("g", "");
    r.require_known_member_id = false;
    auto j = join(r);
    EXPECT_FALSE(j.done());
    advance(cfg.initial_rebalance_delay_ms);
    ASSERT_TRUE(j.done());
    EXPECT_FALSE(j.get().error);
    EXPECT_FALSE(j.get().member_id.empty());
}

TEST_F(GroupTest, BarrierWaitsForEveryMemberAndOnlyTheLeaderGetsMembers) {
    auto a = join_new("g");
    auto b = join_new("g");
    // b joined during the initial delay: the delay starts once more (up to the rebalance
    // timeout), as in Kafka.
    advance(cfg.initial_rebalance_delay_ms);
    advance(cfg.initial_rebalance_delay_ms);
    ASSERT_TRUE(a.done());
    ASSERT_TRUE(b.done());
    EXPECT_EQ(a.get().generation_id, 1);
    EXPECT_EQ(b.get().generation_id, 1);
    EXPECT_EQ(a.get().leader, b.get().leader);
    const auto& leader = a.get().leader == a.get().member_id ? a : b;
    const auto& follower = a.get().leader == a.get().member_id ? b : a;
    EXPECT_EQ(leader.get().members.size(), 2u);
    EXPECT_TRUE(follower.get().members.empty());

    // Followers wait in SyncGroup until the leader brings the assignment.
    auto fs = sync("g", follower.get().member_id, 1);
    EXPECT_FALSE(fs.done());
    auto ls = sync("g", leader.get().member_id, 1,
                   {{leader.get().member_id, assignment("t", {0, 1, 2})},
                    {follower.get().member_id, assignment("t", {3, 4, 5})}});
    ASSERT_TRUE(ls.done());
    ASSERT_TRUE(fs.done());
    EXPECT_FALSE(fs.get().error);
    EXPECT_EQ(fs.get().assignment, assignment("t", {3, 4, 5}));
    EXPECT_EQ(ls.get().assignment, assignment("t", {0, 1, 2}));
    EXPECT_EQ(fs.get().protocol_name, "range");

    auto groups = coord->list_groups_now({}, {});
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].state, "Stable");
}

TEST_F(GroupTest, HeartbeatErrors) {
    auto [member, gen] = stable_single("g");
    EXPECT_FALSE(beat("g", member, gen));
    EXPECT_EQ(beat("g", member, gen + 1), errc::illegal_generation);
    EXPECT_EQ(beat("g", "nobody", gen), errc::unknown_member_id);
    EXPECT_EQ(beat("other", member, gen), errc::unknown_member_id);

    // A second member joining puts the group into a rebalance.
    auto b = join_new("g");
    EXPECT_EQ(beat("g", member, gen), errc::rebalance_in_progress);
    auto again = join(join_req("g", member));
    ASSERT_TRUE(b.done());
    ASSERT_TRUE(again.done());
    EXPECT_EQ(again.get().generation_id, gen + 1);
}

TEST_F(GroupTest, ExpiredSessionRemovesTheMemberAndRebalances) {
    auto a = join_new("g");
    auto b = join_new("g");
    // b joined during the initial delay: the delay starts once more (up to the rebalance
    // timeout), as in Kafka.
    advance(cfg.initial_rebalance_delay_ms);
    advance(cfg.initial_rebalance_delay_ms);
    const std::string ida = a.get().member_id;
    const std::string idb = b.get().member_id;
    auto sa = sync("g", ida, 1);
    auto sb = sync("g", idb, 1);
    ASSERT_TRUE(sa.done() && sb.done());

    // Only a heartbeats; b's session (10 s) runs out.
    for (int i = 0; i < 3; ++i) {
        advance(3000);
        EXPECT_FALSE(beat("g", ida, 1)) << i;
    }
    advance(3000);
    EXPECT_EQ(beat("g", ida, 1), errc::rebalance_in_progress);
    auto rejoin = join(join_req("g", ida));
    ASSERT_TRUE(rejoin.done());  // b is gone: a alone completes the barrier
    EXPECT_EQ(rejoin.get().generation_id, 2);
    EXPECT_EQ(rejoin.get().members.size(), 1u);
    EXPECT_EQ(beat("g", idb, 1), errc::unknown_member_id);
}

TEST_F(GroupTest, MemberThatDoesNotRejoinIsDroppedAtTheRebalanceTimeout) {
    auto a = join_new("g");
    auto b = join_new("g");
    // b joined during the initial delay: the delay starts once more (up to the rebalance
    // timeout), as in Kafka.
    advance(cfg.initial_rebalance_delay_ms);
    advance(cfg.initial_rebalance_delay_ms);
    auto sa = sync("g", a.get().member_id, 1);
    auto sb = sync("g", b.get().member_id, 1);
    // a rejoins (say, its subscription changed); b keeps heartbeating but never rejoins.
    auto ra = join(join_req("g", a.get().member_id, {"t", "u"}));
    EXPECT_FALSE(ra.done());
    for (int i = 0; i < 9; ++i) {
        advance(3000);
        EXPECT_EQ(beat("g", b.get().member_id, 1), errc::rebalance_in_progress);
    }
    EXPECT_FALSE(ra.done());
    advance(3000);  // 30 s: the rebalance timeout
    ASSERT_TRUE(ra.done());
    EXPECT_EQ(ra.get().generation_id, 2);
    EXPECT_EQ(ra.get().members.size(), 1u);
}

TEST_F(GroupTest, LeaveGroupRebalancesAndAnswersPerMember) {
    auto a = join_new("g");
    auto b = join_new("g");
    // b joined during the initial delay: the delay starts once more (up to the rebalance
    // timeout), as in Kafka.
    advance(cfg.initial_rebalance_delay_ms);
    advance(cfg.initial_rebalance_delay_ms);
    auto sa = sync("g", a.get().member_id, 1);
    auto sb = sync("g", b.get().member_id, 1);
    auto res = coord->leave_group_now(group_id("g"), {{b.get().member_id, std::nullopt, "bye"},
                                                      {"ghost", std::nullopt, std::nullopt}});
    EXPECT_FALSE(res.error);
    ASSERT_EQ(res.members.size(), 2u);
    EXPECT_FALSE(res.members[0].error);
    EXPECT_EQ(res.members[1].error, errc::unknown_member_id);
    EXPECT_EQ(beat("g", a.get().member_id, 1), errc::rebalance_in_progress);
    auto ra = join(join_req("g", a.get().member_id));
    ASSERT_TRUE(ra.done());
    EXPECT_EQ(ra.get().generation_id, 2);

    EXPECT_EQ(coord->leave_group_now(group_id("nope"), {{"x", std::nullopt, std::nullopt}}).error,
              errc::unknown_member_id);
}

TEST_F(GroupTest, LastMemberLeavingEmptiesTheGroup) {
    auto [member, gen] = stable_single("g");
    EXPECT_FALSE(
        coord->leave_group_now(group_id("g"), {{member, std::nullopt, std::nullopt}}).error);
    auto groups = coord->list_groups_now({"empty"}, {});
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].state, "Empty");
    EXPECT_TRUE(coord->list_groups_now({"Stable"}, {}).empty());
}

TEST_F(GroupTest, JoinValidation) {
    auto r = join_req("g", "");
    r.session_timeout_ms = 10;
    EXPECT_EQ(join(r).get().error, errc::invalid_session_timeout);
    r = join_req("", "");
    EXPECT_EQ(join(r).get().error, errc::invalid_group_id);
    // A member id the group never handed out.
    EXPECT_EQ(join(join_req("g", "made-up")).get().error, errc::unknown_member_id);

    auto [member, gen] = stable_single("g");
    // A different protocol type, or protocols no member supports.
    r = join_req("g", "");
    r.protocol_type = "connect";
    EXPECT_EQ(join(r).get().error, errc::inconsistent_group_protocol);
    r = join_req("g", "");
    r.protocols = {{"roundrobin", subscription({"t"})}};
    EXPECT_EQ(join(r).get().error, errc::inconsistent_group_protocol);
    EXPECT_EQ(join(join_req("g", "made-up")).get().error, errc::unknown_member_id);
    // Nothing of that touched the group.
    EXPECT_FALSE(beat("g", member, gen));
}

TEST_F(GroupTest, GroupMaxSize) {
    cfg.max_size = 1;
    restart();
    auto [member, gen] = stable_single("g");
    auto extra = join(join_req("g", ""));
    ASSERT_TRUE(extra.done());
    EXPECT_EQ(extra.get().error, errc::group_max_size_reached);
    EXPECT_FALSE(beat("g", member, gen));
}

TEST_F(GroupTest, StaticMemberRejoiningReplacesItselfWithoutRebalance) {
    auto first = join(join_req("g", "", {"t"}, "instance-1"));  // static: no MEMBER_ID_REQUIRED
    advance(cfg.initial_rebalance_delay_ms);
    ASSERT_TRUE(first.done());
    ASSERT_FALSE(first.get().error);
    const std::string old_id = first.get().member_id;
    EXPECT_EQ(old_id.rfind("instance-1-", 0), 0u);
    auto s = sync("g", old_id, 1, {{old_id, assignment("t", {0, 1})}});
    ASSERT_TRUE(s.done());

    // The process restarts: it comes back without its member id.
    auto again = join(join_req("g", "", {"t"}, "instance-1"));
    ASSERT_TRUE(again.done());
    EXPECT_FALSE(again.get().error);
    EXPECT_NE(again.get().member_id, old_id);
    EXPECT_EQ(again.get().generation_id, 1);  // no rebalance
    auto s2 = sync("g", again.get().member_id, 1);
    ASSERT_TRUE(s2.done());
    EXPECT_EQ(s2.get().assignment, assignment("t", {0, 1}));
    // The old incarnation is fenced.
    EXPECT_EQ(coord->heartbeat_now({group_id("g"), 1, old_id, "instance-1"}),
              errc::fenced_instance_id);
    EXPECT_FALSE(coord->heartbeat_now({group_id("g"), 1, again.get().member_id, "instance-1"}));
}

TEST_F(GroupTest, SyncErrors) {
    auto [member, gen] = stable_single("g");
    EXPECT_EQ(sync("g", member, gen + 5).get().error, errc::illegal_generation);
    EXPECT_EQ(sync("g", "ghost", gen).get().error, errc::unknown_member_id);
    EXPECT_EQ(sync("nope", member, gen).get().error, errc::unknown_member_id);
    sync_group_request r;
    r.group_id = group_id("g");
    r.member_id = member;
    r.generation_id = gen;
    r.protocol_name = "roundrobin";
    std::optional<sync_group_result> out;
    coord->sync_group(r, [&](sync_group_result s) { out = s; });
    ASSERT_TRUE(out);
    EXPECT_EQ(out->error, errc::inconsistent_group_protocol);
}

TEST_F(GroupTest, GroupsAreIndependent) {
    auto [ma, ga] = stable_single("a");
    // Bad calls against group b change nothing in a.
    EXPECT_EQ(join(join_req("b", "made-up")).get().error, errc::unknown_member_id);
    EXPECT_EQ(beat("b", ma, ga), errc::unknown_member_id);
    auto big = join_req("b", "");
    big.protocols[0].metadata.assign(2 << 20, std::byte{7});
    auto j = join(big);
    EXPECT_EQ(j.get().error, errc::member_id_required);
    EXPECT_FALSE(beat("a", ma, ga));
}

TEST_F(GroupTest, HugeMetadataFailsTheLeadersSyncNotOtherGroups) {
    auto [ma, ga] = stable_single("a");
    auto big = join_req("b", "");
    big.protocols[0].metadata.assign(2 << 20, std::byte{7});  // over max.message.bytes
    auto first = join(big);
    big.member_id = first.get().member_id;
    auto j = join(big);
    advance(cfg.initial_rebalance_delay_ms);
    ASSERT_TRUE(j.done());
    ASSERT_FALSE(j.get().error);
    auto s = sync("b", j.get().member_id, j.get().generation_id);
    ASSERT_TRUE(s.done());
    EXPECT_EQ(s.get().error, errc::record_too_large);
    EXPECT_FALSE(beat("a", ma, ga));
}

TEST_F(GroupTest, ASecondParkedCallAnswersTheFirst) {
    auto a = join_new("g");
    auto b = join_new("g");
    advance(cfg.initial_rebalance_delay_ms);
    advance(cfg.initial_rebalance_delay_ms);
    const std::string follower = a.get().leader == a.get().member_id ? b.get().member_id
                                                                     : a.get().member_id;
    auto first = sync("g", follower, 1);
    auto second = sync("g", follower, 1);
    ASSERT_TRUE(first.done());
    EXPECT_EQ(first.get().error, errc::rebalance_in_progress);
    EXPECT_FALSE(second.done());
}

}  // namespace
}  // namespace sluice::backend::group::test
