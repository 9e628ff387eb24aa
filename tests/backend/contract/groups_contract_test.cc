// Contract: consumer groups (backend/api/groups.h), through the classic protocol as a client
// drives it: join, sync, heartbeat, leave, generations and rebalances; committed offsets and
// their durability; describe, list and delete.
#include <algorithm>

#include "tests/backend/contract/contract_backends.h"

namespace sluice::backend::contract {
namespace {

std::vector<std::byte> bytes_of(std::string_view s) {
    auto b = protocol::as_bytes(s);
    return {b.begin(), b.end()};
}

template <typename F>
class GroupsContract : public BackendContract<F> {
protected:
    void SetUp() override {
        BackendContract<F>::SetUp();
        this->create_topic("t", 2);
    }

    api::join_group_request join_request(const std::string& group, const std::string& member,
                                         std::string protocol_type = "consumer") {
        api::join_group_request req;
        req.group_id = group_id(group);
        req.member_id = member;
        req.protocol_type = std::move(protocol_type);
        req.protocols.push_back({"range", bytes_of("meta-" + member)});
        req.session_timeout_ms = 10000;
        req.rebalance_timeout_ms = 10000;
        req.client = {"client-" + member, "127.0.0.1"};
        return req;
    }

    api::join_group_result join(const std::string& group, const std::string& member) {
        return this->run(this->groups().join_group(join_request(group, member)));
    }

    api::sync_group_result sync(const std::string& group, std::int32_t generation,
                                const std::string& member,
                                std::map<std::string, std::vector<std::byte>> assignments = {}) {
        api::sync_group_request req;
        req.group_id = group_id(group);
        req.generation_id = generation;
        req.member_id = member;
        req.protocol_type = "consumer";
        req.protocol_name = "range";
        req.assignments = std::move(assignments);
        return this->run(this->groups().sync_group(std::move(req)));
    }

    /// The heartbeat's error, empty when it succeeded.
    api::backend_error heartbeat(const std::string& group, std::int32_t generation,
                                 const std::string& member) {
        api::heartbeat_request req;
        req.group_id = group_id(group);
        req.generation_id = generation;
        req.member_id = member;
        auto r = this->run(this->groups().heartbeat(std::move(req)));
        return r ? api::backend_error() : r.error();
    }

    /// A group with one member, joined and synced: answers {member id, generation}.
    std::pair<std::string, std::int32_t> stable_group(const std::string& group) {
        auto first = join(group, "");
        EXPECT_FALSE(first.error) << first.error.text();
        auto s = sync(group, first.generation_id, first.member_id,
                      {{first.member_id, bytes_of("assignment-1")}});
        EXPECT_FALSE(s.error) << s.error.text();
        return {first.member_id, first.generation_id};
    }

    api::offset_commit_result commit(const std::string& group, std::int32_t partition,
                                     std::int64_t off, std::optional<std::string> metadata = {},
                                     std::int32_t generation = -1, std::string member = "") {
        api::offset_commit_request req;
        req.group_id = group_id(group);
        req.generation_id_or_member_epoch = generation;
        req.member_id = std::move(member);
        req.topics.push_back(
            {topic_name("t"), {{partition_id(partition), offset(off), -1, std::move(metadata)}}});
        return this->run(this->groups().commit_offsets(std::move(req)));
    }

    api::backend_error commit_error(const api::offset_commit_result& r) {
        if (r.topics.size() != 1 || r.topics[0].partitions.size() != 1) {
            ADD_FAILURE() << "commit answered " << r.topics.size() << " topics";
            return {};
        }
        return r.topics[0].partitions[0].error;
    }

    api::fetched_offset committed(const std::string& group, std::int32_t partition) {
        api::offset_fetch_request f;
        f.group_id = group_id(group);
        f.topics = std::vector<api::topic_partition_list>{{topic_name("t"), {partition_id(partition)}}};
        auto r = this->run(this->groups().fetch_offsets({f}));
        if (r.size() != 1 || r[0].topics.size() != 1 || r[0].topics[0].partitions.size() != 1) {
            ADD_FAILURE() << "fetch_offsets answered " << r.size() << " groups";
            return {};
        }
        EXPECT_FALSE(r[0].error) << r[0].error.text();
        return r[0].topics[0].partitions[0];
    }

    std::optional<api::described_group> describe(const std::string& group) {
        auto d = this->run(this->groups().describe_groups({group_id(group)}));
        if (d.size() != 1) {
            ADD_FAILURE() << "describe_groups answered " << d.size() << " groups";
            return std::nullopt;
        }
        return d[0];
    }
};
TYPED_TEST_SUITE(GroupsContract, backend_factories, factory_names);

TYPED_TEST(GroupsContract, GroupsAreLoadedAfterOpening) {
    EXPECT_TRUE(this->groups().loaded());
}

TYPED_TEST(GroupsContract, FirstJoinWithoutIdAsksToRejoinWithTheIdHandedOut) {
    auto req = this->join_request("g", "");
    req.require_known_member_id = true;
    auto first = this->run(this->groups().join_group(req));
    EXPECT_EQ(reason_of(first.error), api::errc::member_id_required);
    ASSERT_FALSE(first.member_id.empty());

    auto second = this->join("g", first.member_id);
    ASSERT_FALSE(second.error) << second.error.text();
    EXPECT_EQ(second.member_id, first.member_id);
}

TYPED_TEST(GroupsContract, SingleMemberJoinsSyncsAndHeartbeats) {
    auto j = this->join("g", "");
    ASSERT_FALSE(j.error) << j.error.text();
    EXPECT_FALSE(j.member_id.empty());
    EXPECT_EQ(j.generation_id, 1);
    EXPECT_EQ(j.leader, j.member_id);
    EXPECT_EQ(j.protocol_name, "range");
    ASSERT_EQ(j.members.size(), 1u);
    EXPECT_EQ(j.members[0].member_id, j.member_id);
    EXPECT_EQ(j.members[0].metadata, bytes_of("meta-"));

    auto s = this->sync("g", j.generation_id, j.member_id, {{j.member_id, bytes_of("mine")}});
    ASSERT_FALSE(s.error) << s.error.text();
    EXPECT_EQ(s.assignment, bytes_of("mine"));

    EXPECT_FALSE(this->heartbeat("g", j.generation_id, j.member_id));
    auto d = this->describe("g");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->state, "Stable");
    EXPECT_EQ(d->protocol_type, "consumer");
    EXPECT_EQ(d->protocol_data, "range");
    ASSERT_EQ(d->members.size(), 1u);
    EXPECT_EQ(d->members[0].assignment, bytes_of("mine"));
    EXPECT_EQ(d->members[0].client_id, "client-");
}

TYPED_TEST(GroupsContract, HeartbeatErrorsNameWhatIsWrong) {
    auto [member, generation] = this->stable_group("g");
    EXPECT_EQ(reason_of(this->heartbeat("g", generation + 1, member)),
              api::errc::illegal_generation);
    EXPECT_EQ(reason_of(this->heartbeat("g", generation, "stranger")),
              api::errc::unknown_member_id);
    // compat: Kafka answers a heartbeat to a group it does not know with UNKNOWN_MEMBER_ID.
    EXPECT_EQ(reason_of(this->heartbeat("no-such-group", 1, member)),
              api::errc::unknown_member_id);
}

TYPED_TEST(GroupsContract, SyncWithWrongGenerationIsIllegal) {
    auto j = this->join("g", "");
    ASSERT_FALSE(j.error);
    auto s = this->sync("g", j.generation_id + 5, j.member_id, {{j.member_id, {}}});
    EXPECT_EQ(reason_of(s.error), api::errc::illegal_generation);
}

TYPED_TEST(GroupsContract, SecondMemberTriggersARebalanceToTheNextGeneration) {
    auto [a, gen1] = this->stable_group("g");
    auto b_join = this->spawn(this->groups().join_group(this->join_request("g", "")));
    // The first member learns of the rebalance through its heartbeat.
    api::backend_error beat;
    for (int i = 0; i < 100 && reason_of(beat) != api::errc::rebalance_in_progress; ++i) {
        beat = this->heartbeat("g", gen1, a);
    }
    ASSERT_EQ(reason_of(beat), api::errc::rebalance_in_progress);
    EXPECT_FALSE(b_join->has_value()) << "the join completed before every member rejoined";
    EXPECT_EQ(this->describe("g")->state, "PreparingRebalance");

    auto a_join = this->join("g", a);
    ASSERT_TRUE(this->run_until([&] { return b_join->has_value(); }));
    const auto& bj = **b_join;
    ASSERT_FALSE(a_join.error) << a_join.error.text();
    ASSERT_FALSE(bj.error) << bj.error.text();
    EXPECT_EQ(a_join.generation_id, gen1 + 1);
    EXPECT_EQ(bj.generation_id, gen1 + 1);
    EXPECT_EQ(a_join.leader, bj.leader);
    const bool a_leads = a_join.leader == a;
    EXPECT_TRUE(a_leads || a_join.leader == bj.member_id);
    // Only the leader gets the member list.
    EXPECT_EQ((a_leads ? a_join : bj).members.size(), 2u);
    EXPECT_TRUE((a_leads ? bj : a_join).members.empty());

    // The follower's sync waits for the leader's assignment.
    const std::string leader = a_join.leader;
    const std::string follower = a_leads ? bj.member_id : a;
    api::sync_group_request freq;
    freq.group_id = group_id("g");
    freq.generation_id = gen1 + 1;
    freq.member_id = follower;
    auto f_sync = this->spawn(this->groups().sync_group(std::move(freq)));
    auto l_sync = this->sync("g", gen1 + 1, leader,
                             {{leader, bytes_of("for-leader")}, {follower, bytes_of("for-follower")}});
    ASSERT_FALSE(l_sync.error) << l_sync.error.text();
    EXPECT_EQ(l_sync.assignment, bytes_of("for-leader"));
    ASSERT_TRUE(this->run_until([&] { return f_sync->has_value(); }));
    EXPECT_FALSE((**f_sync).error);
    EXPECT_EQ((**f_sync).assignment, bytes_of("for-follower"));
    EXPECT_EQ(this->describe("g")->state, "Stable");
    EXPECT_FALSE(this->heartbeat("g", gen1 + 1, follower));
}

TYPED_TEST(GroupsContract, LeaveEmptiesTheGroup) {
    auto [member, generation] = this->stable_group("g");
    (void)generation;
    std::vector<api::leave_member> leaving{{member, std::nullopt, std::string("done")}};
    auto r = this->run(this->groups().leave_group(group_id("g"), leaving));
    EXPECT_FALSE(r.error) << r.error.text();
    ASSERT_EQ(r.members.size(), 1u);
    EXPECT_EQ(r.members[0].member_id, member);
    EXPECT_FALSE(r.members[0].error);
    auto d = this->describe("g");
    EXPECT_EQ(d->state, "Empty");
    EXPECT_TRUE(d->members.empty());
    // A member that left is unknown.
    std::vector<api::leave_member> again{{member, std::nullopt, std::nullopt}};
    auto twice = this->run(this->groups().leave_group(group_id("g"), again));
    ASSERT_EQ(twice.members.size(), 1u);
    EXPECT_EQ(reason_of(twice.members[0].error), api::errc::unknown_member_id);
}

TYPED_TEST(GroupsContract, JoinRefusesBadRequests) {
    auto empty_id = this->join_request("", "");
    EXPECT_EQ(reason_of(this->run(this->groups().join_group(empty_id)).error),
              api::errc::invalid_group_id);

    auto short_session = this->join_request("g", "");
    short_session.session_timeout_ms = 1;
    EXPECT_EQ(reason_of(this->run(this->groups().join_group(short_session)).error),
              api::errc::invalid_session_timeout);

    this->stable_group("g");
    auto other = this->join_request("g", "", "connect");
    other.protocols = {{"other", {}}};
    EXPECT_EQ(reason_of(this->run(this->groups().join_group(other)).error),
              api::errc::inconsistent_group_protocol);
}

TYPED_TEST(GroupsContract, CommittedOffsetsAreFetchedBack) {
    EXPECT_FALSE(this->commit_error(this->commit("g", 0, 42, std::string("meta"))));
    auto got = this->committed("g", 0);
    EXPECT_FALSE(got.error);
    EXPECT_EQ(got.committed.value, 42);
    EXPECT_EQ(got.metadata, "meta");
    // A partition without a commit answers -1.
    EXPECT_EQ(this->committed("g", 1).committed.value, -1);
    // A later commit replaces the offset.
    EXPECT_FALSE(this->commit_error(this->commit("g", 0, 50)));
    EXPECT_EQ(this->committed("g", 0).committed.value, 50);
}

TYPED_TEST(GroupsContract, FetchOfEveryCommittedOffset) {
    EXPECT_FALSE(this->commit_error(this->commit("g", 0, 1)));
    EXPECT_FALSE(this->commit_error(this->commit("g", 1, 2)));
    api::offset_fetch_request f;
    f.group_id = group_id("g");
    auto r = this->run(this->groups().fetch_offsets({f}));
    ASSERT_EQ(r.size(), 1u);
    std::map<std::int32_t, std::int64_t> seen;
    for (const auto& t : r[0].topics) {
        EXPECT_EQ(t.topic, topic_name("t"));
        for (const auto& p : t.partitions) {
            seen[p.partition.value] = p.committed.value;
        }
    }
    EXPECT_EQ(seen, (std::map<std::int32_t, std::int64_t>{{0, 1}, {1, 2}}));
}

TYPED_TEST(GroupsContract, CommittedOffsetsSurviveReopening) {
    EXPECT_FALSE(this->commit_error(this->commit("g", 1, 99, std::string("kept"))));
    this->reopen();
    EXPECT_TRUE(this->groups().loaded());
    auto got = this->committed("g", 1);
    EXPECT_EQ(got.committed.value, 99);
    EXPECT_EQ(got.metadata, "kept");
}

TYPED_TEST(GroupsContract, MemberCommitsAreCheckedAgainstTheGeneration) {
    auto [member, generation] = this->stable_group("g");
    EXPECT_FALSE(this->commit_error(this->commit("g", 0, 5, {}, generation, member)));
    EXPECT_EQ(reason_of(this->commit_error(this->commit("g", 0, 6, {}, generation + 1, member))),
              api::errc::illegal_generation);
    EXPECT_EQ(reason_of(this->commit_error(this->commit("g", 0, 7, {}, generation, "stranger"))),
              api::errc::unknown_member_id);
    EXPECT_EQ(this->committed("g", 0).committed.value, 5);
}

TYPED_TEST(GroupsContract, TooLargeMetadataIsRefused) {
    auto r = this->commit("g", 0, 5, std::string(100000, 'm'));
    EXPECT_EQ(reason_of(this->commit_error(r)), api::errc::offset_metadata_too_large);
    EXPECT_EQ(this->committed("g", 0).committed.value, -1);
}

TYPED_TEST(GroupsContract, DeleteOffsetsOfAnEmptyGroup) {
    EXPECT_FALSE(this->commit_error(this->commit("g", 0, 3)));
    EXPECT_FALSE(this->commit_error(this->commit("g", 1, 4)));
    std::vector<api::topic_partition_list> which{{topic_name("t"), {partition_id(0)}}};
    auto r = this->run(this->groups().delete_offsets(group_id("g"), which));
    EXPECT_FALSE(r.error) << r.error.text();
    EXPECT_EQ(this->committed("g", 0).committed.value, -1);
    EXPECT_EQ(this->committed("g", 1).committed.value, 4);
}

TYPED_TEST(GroupsContract, ListGroupsShowsGroupsWithTheirState) {
    this->stable_group("live");
    EXPECT_FALSE(this->commit_error(this->commit("idle", 0, 1)));
    auto all = this->run(this->groups().list_groups({}, {}));
    auto find = [&](const std::vector<api::listed_group>& l, const std::string& id) {
        return std::find_if(l.begin(), l.end(),
                            [&](const auto& g) { return g.group_id.value == id; });
    };
    auto live = find(all, "live");
    ASSERT_NE(live, all.end());
    EXPECT_EQ(live->state, "Stable");
    EXPECT_EQ(live->protocol_type, "consumer");
    EXPECT_EQ(live->type, "classic");
    auto idle = find(all, "idle");
    ASSERT_NE(idle, all.end());
    EXPECT_EQ(idle->state, "Empty");

    // State filters are case-insensitive.
    auto stable = this->run(this->groups().list_groups({"stable"}, {}));
    EXPECT_NE(find(stable, "live"), stable.end());
    EXPECT_EQ(find(stable, "idle"), stable.end());
}

TYPED_TEST(GroupsContract, DeleteGroupsRemovesEmptyGroupsOnly) {
    this->stable_group("busy");
    EXPECT_FALSE(this->commit_error(this->commit("idle", 0, 8)));
    auto r = this->run(this->groups().delete_groups(
        {group_id("busy"), group_id("idle"), group_id("never-seen")}));
    ASSERT_EQ(r.size(), 3u);
    EXPECT_EQ(r[0].group_id, group_id("busy"));
    EXPECT_EQ(reason_of(r[0].error), api::errc::non_empty_group);
    EXPECT_FALSE(r[1].error) << r[1].error.text();
    EXPECT_EQ(reason_of(r[2].error), api::errc::group_id_not_found);
    // The deleted group's offsets are gone, also after reopening.
    EXPECT_EQ(this->committed("idle", 0).committed.value, -1);
    this->reopen();
    EXPECT_EQ(this->committed("idle", 0).committed.value, -1);
}

TYPED_TEST(GroupsContract, DescribeUnknownGroupAnswersDeadOrNotFound) {
    auto d = this->describe("never-seen");
    ASSERT_TRUE(d);
    // compat: Kafka describes an unknown group as Dead without error (DescribeGroups v0-5)
    // or with GROUP_ID_NOT_FOUND (v6+): the front chooses; the backend gives either.
    if (d->error) {
        EXPECT_EQ(reason_of(d->error), api::errc::group_id_not_found);
    } else {
        EXPECT_EQ(d->state, "Dead");
    }
    EXPECT_TRUE(d->members.empty());
}

}  // namespace
}  // namespace sluice::backend::contract
