// The KIP-848 consumer protocol: joining, server-side assignment, incremental reconciliation
// (revoke before reassign), epochs, static members, and the assignors.
#include "backend/group/assignor.h"
#include "tests/backend/group/group_test_support.h"
#include "tests/backend/support.h"

namespace sluice::backend::group::test {
namespace {

class ConsumerGroupTest : public GroupTest {
protected:
    uuid topic_id() { return log->find_topic("t")->id; }

    consumer_heartbeat_request hb(const std::string& member, std::int32_t epoch,
                                  std::optional<std::vector<owned_partitions>> owned) {
        consumer_heartbeat_request r;
        r.group_id = group_id("cg");
        r.member_id = member;
        r.member_epoch = epoch;
        if (epoch == 0) {
            r.rebalance_timeout_ms = 30000;
            r.subscribed_topic_names = std::vector<topic_name>{topic_name("t")};
        }
        r.topic_partitions = std::move(owned);
        r.client = {"c", "/127.0.0.1"};
        return r;
    }
    static std::set<std::int32_t> parts_of(const consumer_heartbeat_result& r) {
        std::set<std::int32_t> out;
        if (r.assignment) {
            for (const auto& tp : *r.assignment) {
                for (partition_id p : tp.partitions) {
                    out.insert(p.value);
                }
            }
        }
        return out;
    }
    std::vector<owned_partitions> owned(const std::set<std::int32_t>& ids) {
        owned_partitions o;
        o.topic_id = topic_id();
        for (auto p : ids) {
            o.partitions.emplace_back(p);
        }
        return {o};
    }
};

TEST_F(ConsumerGroupTest, FirstMemberGetsEveryPartition) {
    auto r = coord->consumer_heartbeat_now(hb("m1", 0, std::vector<owned_partitions>{}));
    ASSERT_FALSE(r.error) << r.error.text();
    EXPECT_EQ(r.member_id, "m1");
    EXPECT_EQ(r.member_epoch, 1);
    EXPECT_EQ(r.heartbeat_interval_ms, cfg.consumer_heartbeat_interval_ms);
    EXPECT_EQ(parts_of(r), (std::set<std::int32_t>{0, 1, 2, 3, 4, 5}));
    auto groups = coord->list_groups_now({}, {"consumer"});
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].state, "Stable");
    EXPECT_TRUE(coord->list_groups_now({}, {"classic"}).empty());
}

TEST_F(ConsumerGroupTest, SecondMemberGetsPartitionsOnlyAfterTheFirstRevokesThem) {
    auto a = coord->consumer_heartbeat_now(hb("a", 0, std::vector<owned_partitions>{}));
    auto b = coord->consumer_heartbeat_now(hb("b", 0, std::vector<owned_partitions>{}));
    ASSERT_FALSE(b.error);
    EXPECT_EQ(b.member_epoch, 2);
    EXPECT_TRUE(parts_of(b).empty());  // its partitions are still a's

    // a learns it must give three up: it keeps its epoch until it does.
    auto a2 = coord->consumer_heartbeat_now(hb("a", 1, owned({0, 1, 2, 3, 4, 5})));
    ASSERT_FALSE(a2.error);
    EXPECT_EQ(a2.member_epoch, 1);
    auto kept = parts_of(a2);
    EXPECT_EQ(kept.size(), 3u);

    // Until a acknowledges, b gets nothing.
    auto b2 = coord->consumer_heartbeat_now(hb("b", 2, owned({})));
    EXPECT_TRUE(parts_of(b2).empty());

    auto a3 = coord->consumer_heartbeat_now(hb("a", 1, owned(kept)));
    EXPECT_EQ(a3.member_epoch, 2);
    auto b3 = coord->consumer_heartbeat_now(hb("b", 2, owned({})));
    auto given = parts_of(b3);
    EXPECT_EQ(given.size(), 3u);
    for (auto p : given) {
        EXPECT_FALSE(kept.contains(p));
    }
    auto d = coord->describe_consumer_groups_now({group_id("cg")});
    EXPECT_EQ(d[0].state, "Stable");
    EXPECT_EQ(d[0].group_epoch, 2);
}

TEST_F(ConsumerGroupTest, EpochsAreChecked) {
    coord->consumer_heartbeat_now(hb("a", 0, std::vector<owned_partitions>{}));
    EXPECT_EQ(coord->consumer_heartbeat_now(hb("a", 7, owned({}))).error,
              errc::fenced_member_epoch);
    EXPECT_EQ(coord->consumer_heartbeat_now(hb("ghost", 1, owned({}))).error,
              errc::unknown_member_id);
    auto bad = hb("a", 0, std::nullopt);
    EXPECT_EQ(coord->consumer_heartbeat_now(bad).error, errc::invalid_request);
    bad = hb("x", 0, std::vector<owned_partitions>{});
    bad.server_assignor = "sticky";
    EXPECT_EQ(coord->consumer_heartbeat_now(bad).error, errc::unsupported_assignor);
    bad = hb("x", -3, std::nullopt);
    EXPECT_EQ(coord->consumer_heartbeat_now(bad).error, errc::invalid_request);
}

TEST_F(ConsumerGroupTest, LeavingFreesPartitionsAndSessionExpiryFences) {
    coord->consumer_heartbeat_now(hb("a", 0, std::vector<owned_partitions>{}));
    auto b = coord->consumer_heartbeat_now(hb("b", 0, std::vector<owned_partitions>{}));
    auto a2 = coord->consumer_heartbeat_now(hb("a", 1, owned({0, 1, 2, 3, 4, 5})));
    coord->consumer_heartbeat_now(hb("a", 1, owned(parts_of(a2))));
    auto left = coord->consumer_heartbeat_now(hb("a", leave_group_member_epoch, std::nullopt));
    EXPECT_FALSE(left.error);
    EXPECT_EQ(left.member_epoch, -1);
    auto b2 = coord->consumer_heartbeat_now(hb("b", b.member_epoch, owned({})));
    EXPECT_EQ(parts_of(b2).size(), 6u);

    // b stops heartbeating: fenced after the session timeout.
    advance(cfg.consumer_session_timeout_ms + 1);
    EXPECT_EQ(coord->consumer_heartbeat_now(hb("b", b2.member_epoch, owned({}))).error,
              errc::unknown_member_id);
    EXPECT_EQ(coord->list_groups_now({"Empty"}, {}).size(), 1u);
}

TEST_F(ConsumerGroupTest, GroupConfigsSetTheHeartbeatIntervalAndSessionTimeout) {
    ASSERT_TRUE(coord->set_group_configs(group_id("cg"),
                                         {{"consumer.heartbeat.interval.ms", "7000"},
                                          {"consumer.session.timeout.ms", "50000"}},
                                         false));
    auto a = coord->consumer_heartbeat_now(hb("a", 0, std::vector<owned_partitions>{}));
    EXPECT_EQ(a.heartbeat_interval_ms, 7000);
    // Fenced after the group's session timeout, not the broker's (45 s).
    advance(cfg.consumer_session_timeout_ms + 1);
    EXPECT_FALSE(coord->consumer_heartbeat_now(hb("a", a.member_epoch, owned(parts_of(a)))).error);
    auto members = [&] {
        auto v = coord->view_group(group_id("cg"));
        return v ? v->members.size() : 0u;
    };
    advance(49999);
    EXPECT_EQ(members(), 1u);
    advance(2);
    EXPECT_EQ(members(), 0u);

    // Removing them brings back the broker's settings.
    ASSERT_TRUE(coord->set_group_configs(group_id("cg"), {}, false));
    auto b = coord->consumer_heartbeat_now(hb("b", 0, std::vector<owned_partitions>{}));
    EXPECT_EQ(b.heartbeat_interval_ms, cfg.consumer_heartbeat_interval_ms);
}

TEST_F(ConsumerGroupTest, GroupConfigsAreCheckedAsKafkaChecksThem) {
    auto refused = [&](std::map<std::string, std::string> c) {
        auto r = coord->set_group_configs(group_id("cg"), std::move(c), false);
        EXPECT_FALSE(r);
        EXPECT_EQ(r ? std::error_code{} : r.error().code, api::errc::invalid_config);
        return r ? std::string() : r.error().message;
    };
    EXPECT_EQ(refused({{"consumer.session.timeout.ms", "44999"}}),
              "consumer.session.timeout.ms must be greater than or equal to "
              "group.consumer.min.session.timeout.ms");
    EXPECT_EQ(refused({{"consumer.session.timeout.ms", "60001"}}),
              "consumer.session.timeout.ms must be less than or equal to "
              "group.consumer.max.session.timeout.ms");
    EXPECT_EQ(refused({{"consumer.heartbeat.interval.ms", "4999"}}),
              "consumer.heartbeat.interval.ms must be greater than or equal to "
              "group.consumer.min.heartbeat.interval.ms");
    EXPECT_EQ(refused({{"share.session.timeout.ms", "1"}}),
              "Unknown group config name: share.session.timeout.ms");
    refused({{"consumer.heartbeat.interval.ms", "soon"}});
    // validate_only changes nothing.
    ASSERT_TRUE(coord->set_group_configs(group_id("cg"),
                                         {{"consumer.heartbeat.interval.ms", "6000"}}, true));
    auto entries = coord->describe_group_configs(group_id("cg"));
    ASSERT_EQ(entries.size(), 2u);
    EXPECT_EQ(entries[1].name, "consumer.heartbeat.interval.ms");
    EXPECT_EQ(entries[1].value, "5000");
    EXPECT_EQ(entries[1].source, api::config_source::default_config);
}

TEST_F(ConsumerGroupTest, CommitsNeedTheCurrentMemberEpoch) {
    auto a = coord->consumer_heartbeat_now(hb("a", 0, std::vector<owned_partitions>{}));
    EXPECT_FALSE(commit("cg", a.member_epoch, "a", {{0, 5}}, "t", 9).topics[0].partitions[0].error);
    EXPECT_EQ(commit("cg", a.member_epoch + 1, "a", {{0, 5}}, "t", 9).topics[0].partitions[0].error,
              errc::fenced_member_epoch);
    coord->consumer_heartbeat_now(hb("b", 0, std::vector<owned_partitions>{}));  // epoch 2
    auto a2 = coord->consumer_heartbeat_now(hb("a", 1, owned({0, 1, 2, 3, 4, 5})));
    coord->consumer_heartbeat_now(hb("a", 1, owned(parts_of(a2))));  // a moves to epoch 2
    EXPECT_EQ(commit("cg", 1, "a", {{0, 6}}, "t", 9).topics[0].partitions[0].error,
              errc::stale_member_epoch);
    EXPECT_EQ(commit("cg", 2, "a", {{0, 6}}, "t", 8).topics[0].partitions[0].error,
              errc::unsupported_version);
    EXPECT_EQ(committed("cg", 0), 5);
}

TEST_F(ConsumerGroupTest, ClassicAndConsumerGroupsCoexist) {
    auto [member, gen] = stable_single("classic");
    auto a = coord->consumer_heartbeat_now(hb("a", 0, std::vector<owned_partitions>{}));
    ASSERT_FALSE(a.error);
    EXPECT_EQ(parts_of(a).size(), 6u);
    EXPECT_FALSE(beat("classic", member, gen));
    // A classic join cannot enter the consumer group, and vice versa.
    auto j = join(join_req("cg", ""));
    EXPECT_EQ(j.get().error, errc::inconsistent_group_protocol);
    auto into_classic = hb("z", 0, std::vector<owned_partitions>{});
    into_classic.group_id = group_id("classic");
    EXPECT_EQ(coord->consumer_heartbeat_now(into_classic).error, errc::group_id_not_found);
    EXPECT_EQ(coord->list_groups_now({}, {}).size(), 2u);
}

TEST_F(ConsumerGroupTest, StaticMemberComesBackUnderANewIdWithItsPartitions) {
    auto r = hb("a1", 0, std::vector<owned_partitions>{});
    r.instance_id = "inst";
    auto a = coord->consumer_heartbeat_now(r);
    ASSERT_FALSE(a.error);
    auto leave = hb("a1", leave_group_static_member_epoch, std::nullopt);
    leave.instance_id = "inst";
    EXPECT_EQ(coord->consumer_heartbeat_now(leave).member_epoch, -2);

    auto other = hb("a2", 0, std::vector<owned_partitions>{});
    other.instance_id = "inst";
    auto back = coord->consumer_heartbeat_now(other);
    ASSERT_FALSE(back.error) << back.error.text();
    EXPECT_EQ(parts_of(back).size(), 6u);

    // While a2 holds the instance, another member cannot take it.
    auto thief = hb("a3", 0, std::vector<owned_partitions>{});
    thief.instance_id = "inst";
    EXPECT_EQ(coord->consumer_heartbeat_now(thief).error, errc::unreleased_instance_id);
}

TEST_F(ConsumerGroupTest, MembersAndAssignmentsSurviveARestart) {
    auto a = coord->consumer_heartbeat_now(hb("a", 0, std::vector<owned_partitions>{}));
    auto b = coord->consumer_heartbeat_now(hb("b", 0, std::vector<owned_partitions>{}));
    auto a2 = coord->consumer_heartbeat_now(hb("a", 1, owned({0, 1, 2, 3, 4, 5})));
    auto kept = parts_of(a2);
    auto a3 = coord->consumer_heartbeat_now(hb("a", 1, owned(kept)));
    auto b2 = coord->consumer_heartbeat_now(hb("b", 2, owned({})));
    ASSERT_EQ(parts_of(b2).size(), 3u);
    ASSERT_FALSE(commit("cg", a3.member_epoch, "a", {{0, 5}}, "t", 9).topics[0].partitions[0].error);
    const auto before = coord->describe_consumer_groups_now({group_id("cg")});

    restart();

    // The group, its members, their epochs and assignments came back as they were.
    auto after = coord->describe_consumer_groups_now({group_id("cg")});
    ASSERT_EQ(after.size(), 1u);
    EXPECT_EQ(after[0].state, "Stable");
    EXPECT_EQ(after[0].group_epoch, before[0].group_epoch);
    EXPECT_EQ(after[0].assignment_epoch, before[0].assignment_epoch);
    ASSERT_EQ(after[0].members.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(after[0].members[i].member_id, before[0].members[i].member_id);
        EXPECT_EQ(after[0].members[i].member_epoch, before[0].members[i].member_epoch);
        EXPECT_EQ(after[0].members[i].client_id, "c");
        EXPECT_EQ(after[0].members[i].assignment, before[0].members[i].assignment);
        EXPECT_EQ(after[0].members[i].target_assignment, before[0].members[i].target_assignment);
    }
    // The members go on with their epochs: no rejoin, no rebalance.
    auto a4 = coord->consumer_heartbeat_now(hb("a", a3.member_epoch, owned(kept)));
    ASSERT_FALSE(a4.error) << a4.error.text();
    EXPECT_EQ(a4.member_epoch, a3.member_epoch);
    EXPECT_FALSE(commit("cg", a4.member_epoch, "a", {{1, 6}}, "t", 9).topics[0].partitions[0].error);
    EXPECT_EQ(committed("cg", 0), 5);
    // A member that does not come back is fenced after its session timeout.
    advance(cfg.consumer_session_timeout_ms / 2);
    coord->consumer_heartbeat_now(hb("a", a4.member_epoch, owned(kept)));
    advance(cfg.consumer_session_timeout_ms / 2 + 1);
    EXPECT_EQ(coord->consumer_heartbeat_now(hb("b", b2.member_epoch, owned({}))).error,
              errc::unknown_member_id);
}

TEST_F(ConsumerGroupTest, FlushedMembersSurviveACrash) {
    auto a = coord->consumer_heartbeat_now(hb("a", 0, std::vector<owned_partitions>{}));
    ASSERT_FALSE(commit("cg", a.member_epoch, "a", {{3, 33}}, "t", 9).topics[0].partitions[0].error);
    ASSERT_FALSE(sluice::backend::test::run_until_done(coord->flush_group(group_id("cg"))));
    coord->stop();
    coord.reset();
    auto crashed = fs->crash_copy();
    log.reset();
    fs = crashed;
    open_log();
    start();
    EXPECT_EQ(committed("cg", 3), 33);
    auto again = coord->consumer_heartbeat_now(hb("a", a.member_epoch, owned({0, 1, 2, 3, 4, 5})));
    ASSERT_FALSE(again.error) << again.error.text();
    EXPECT_EQ(again.member_epoch, a.member_epoch);
}

TEST_F(ConsumerGroupTest, LeavingAndDeletionWriteTombstonesThatReplay) {
    coord->consumer_heartbeat_now(hb("a", 0, std::vector<owned_partitions>{}));
    coord->consumer_heartbeat_now(hb("a", leave_group_member_epoch, std::nullopt));
    restart();
    auto d = coord->describe_consumer_groups_now({group_id("cg")});
    ASSERT_EQ(d.size(), 1u);
    EXPECT_TRUE(d[0].members.empty());
    EXPECT_EQ(d[0].state, "Empty");
    ASSERT_FALSE(coord->delete_groups_now({group_id("cg")})[0].error);
    restart();
    EXPECT_TRUE(coord->list_groups_now({}, {}).empty());
}

/// A member joining `group` that subscribes with a pattern only.
consumer_heartbeat_request by_pattern(const std::string& group, const std::string& member,
                                      const std::string& pattern) {
    consumer_heartbeat_request r;
    r.group_id = group_id(group);
    r.member_id = member;
    r.member_epoch = 0;
    r.rebalance_timeout_ms = 30000;
    r.subscribed_topic_regex = pattern;
    r.topic_partitions = std::vector<owned_partitions>{};
    r.client = {"c", "/127.0.0.1"};
    return r;
}

std::size_t partition_count(const consumer_heartbeat_result& r) {
    std::size_t n = 0;
    if (r.assignment) {
        for (const auto& tp : *r.assignment) {
            n += tp.partitions.size();
        }
    }
    return n;
}

TEST_F(ConsumerGroupTest, PatternsMatchWholeTopicNames) {
    ASSERT_TRUE(log->create_topic("tt", 1, {}));
    // compat: Kafka (RE2/J) matches the whole name: "t" is topic t, not every name with a t.
    auto exact = coord->consumer_heartbeat_now(by_pattern("exact", "m", "t"));
    ASSERT_FALSE(exact.error) << exact.error.message;
    EXPECT_EQ(partition_count(exact), 6u);
    auto prefix = coord->consumer_heartbeat_now(by_pattern("prefix", "m", "t.*"));
    ASSERT_FALSE(prefix.error);
    EXPECT_EQ(partition_count(prefix), 7u);  // t and tt, not u
    auto none = coord->consumer_heartbeat_now(by_pattern("none", "m", "v.*"));
    ASSERT_FALSE(none.error);
    EXPECT_EQ(partition_count(none), 0u);
    auto d = coord->describe_consumer_groups_now({group_id("prefix")});
    ASSERT_EQ(d[0].members.size(), 1u);
    EXPECT_EQ(d[0].members[0].subscribed_topic_regex, "t.*");
}

TEST_F(ConsumerGroupTest, PatternsRe2CannotCompileAreInvalidRegularExpressions) {
    // Unbalanced, a bad repetition, lookahead and a backreference (RE2 has neither).
    for (const char* bad : {"(", "a{2,1}", "(?=t)t", "(t)\\1"}) {
        auto r = coord->consumer_heartbeat_now(by_pattern("bad", "m", bad));
        EXPECT_EQ(r.error, errc::invalid_regular_expression) << bad;
        EXPECT_FALSE(r.error.message.empty()) << bad;
    }
    EXPECT_TRUE(coord->list_groups_now({}, {}).empty());  // refused before any group exists
}

TEST_F(ConsumerGroupTest, PathologicalPatternsAreAnsweredWithoutStallingOtherGroups) {
    // Against a long run of 'a's, a backtracking engine (std::regex among them) takes
    // exponential time or overflows its stack on these; RE2 answers in linear time.
    const std::string name(40, 'a');
    ASSERT_TRUE(log->create_topic(name, 1, {}));
    const std::vector<std::string> pathological = {"(a|aa)*b", "(a*)*c"};
    for (const auto& pattern : pathological) {
        auto r = coord->consumer_heartbeat_now(by_pattern("p-" + pattern, "m", pattern));
        ASSERT_FALSE(r.error) << pattern << ": " << r.error.message;
        EXPECT_EQ(partition_count(r), 0u) << pattern;  // matches nothing
    }
    auto matching = coord->consumer_heartbeat_now(by_pattern("p-match", "m", "(a|aa)*"));
    ASSERT_FALSE(matching.error);
    EXPECT_EQ(partition_count(matching), 1u);  // the 40 'a's

    // Matching passes of those patterns run on a thread of their own (every heartbeat of a
    // pattern member matches every topic) while another group's members are served here.
    std::atomic<bool> done{false};
    std::atomic<int> passes{0};
    std::thread matcher([&] {
        while (!done.load()) {
            const auto& pattern = pathological[passes % pathological.size()];
            coord->consumer_heartbeat_now(by_pattern("p-" + pattern, "m", pattern));
            ++passes;
        }
    });
    auto a = coord->consumer_heartbeat_now(hb("a", 0, std::vector<owned_partitions>{}));
    ASSERT_FALSE(a.error);
    for (int i = 0; i < 50; ++i) {
        auto beat = coord->consumer_heartbeat_now(hb("a", a.member_epoch, owned(parts_of(a))));
        ASSERT_FALSE(beat.error) << i;
    }
    done = true;
    matcher.join();
    EXPECT_EQ(parts_of(a).size(), 6u);
}

TEST(Assignors, UniformIsBalancedAndSticky) {
    uuid t1 = uuid::random();
    uuid t2 = uuid::random();
    topic_sizes sizes{{t1, 6}, {t2, 3}};
    std::vector<assignor_member> members = {{"a", {t1, t2}, {}}, {"b", {t1, t2}, {}},
                                            {"c", {t1, t2}, {}}};
    auto first = assign_uniform(members, sizes);
    std::set<std::pair<uuid, std::int32_t>> seen;
    for (const auto& [m, tp] : first) {
        std::size_t n = 0;
        for (const auto& [t, parts] : tp) {
            for (auto p : parts) {
                EXPECT_TRUE(seen.insert({t, p}).second);
                ++n;
            }
        }
        EXPECT_EQ(n, 3u) << m;
    }
    EXPECT_EQ(seen.size(), 9u);
    // Dropping c moves only c's partitions.
    std::vector<assignor_member> two = {{"a", {t1, t2}, first["a"]}, {"b", {t1, t2}, first["b"]}};
    auto second = assign_uniform(two, sizes);
    for (const auto& m : {"a", "b"}) {
        for (const auto& [t, parts] : first[m]) {
            for (auto p : parts) {
                EXPECT_TRUE(second[m][t].contains(p));
            }
        }
    }
}

TEST(Assignors, RangeGivesContiguousRangesPerTopic) {
    uuid t = uuid::random();
    std::vector<assignor_member> members = {{"b", {t}, {}}, {"a", {t}, {}}};
    auto out = assign_range(members, {{t, 5}});
    EXPECT_EQ(out["a"][t], (std::set<std::int32_t>{0, 1, 2}));
    EXPECT_EQ(out["b"][t], (std::set<std::int32_t>{3, 4}));
}

}  // namespace
}  // namespace sluice::backend::group::test
