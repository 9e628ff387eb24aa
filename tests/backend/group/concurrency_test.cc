// Locking per group: work on one group never waits for another group, and callbacks run with
// no lock of the coordinator held. Each test blocks one group's work on purpose, on a thread
// of its own, and checks that other work is served meanwhile; the wait for that other work
// has a generous bound only so that a regression fails instead of hanging the suite.
#include <chrono>
#include <future>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "tests/backend/group/group_test_support.h"

namespace sluice::backend::group::test {
namespace {

constexpr auto deadlock_guard = std::chrono::seconds(60);

TEST_F(GroupTest, AnswerBlockedInOneGroupDoesNotStallOtherGroups) {
    // Group a: one member parked in JoinGroup until the initial rebalance delay ends.
    auto first = join(join_req("a", ""));
    ASSERT_EQ(first.get().error, errc::member_id_required);
    const std::string member = first.get().member_id;
    std::promise<void> entered;
    std::promise<void> unblock;
    auto unblocked = unblock.get_future().share();
    std::optional<join_group_result> joined;
    coord->join_group(join_req("a", member), [&](join_group_result r) {
        joined = std::move(r);
        entered.set_value();
        unblocked.wait();  // a slow connection: its answer takes as long as the test wants
    });
    ASSERT_FALSE(joined);

    // The barrier completes on a thread of its own, whose answer then blocks.
    now += cfg.initial_rebalance_delay_ms;
    std::thread barrier([&] { coord->run_timers(); });
    entered.get_future().wait();

    // Meanwhile: a commit to group b, its fetch, and a heartbeat of a's member itself.
    struct served {
        std::error_code commit;
        std::int64_t committed = -1;
        std::error_code heartbeat;
    };
    auto other = std::async(std::launch::async, [&] {
        served s;
        s.commit = commit("b", -1, "", {{0, 42}}).topics.at(0).partitions.at(0).error.code;
        s.committed = committed("b", 0);
        s.heartbeat = beat("a", member, 1);
        return s;
    });
    const bool done = other.wait_for(deadlock_guard) == std::future_status::ready;
    unblock.set_value();
    barrier.join();
    ASSERT_TRUE(done) << "work on group b waited for group a's answer";
    const served s = other.get();
    EXPECT_FALSE(s.commit) << s.commit.message();
    EXPECT_EQ(s.committed, 42);
    EXPECT_FALSE(s.heartbeat) << s.heartbeat.message();  // a is CompletingRebalance
    ASSERT_TRUE(joined);
    EXPECT_FALSE(joined->error);
    EXPECT_EQ(joined->generation_id, 1);
}

TEST_F(GroupTest, AnswersMayCallBackIntoTheCoordinator) {
    // A callback that calls the coordinator again (as a front's continuation might) runs
    // after the group's lock is released, so it cannot deadlock on it.
    auto first = join(join_req("g", ""));
    const std::string member = first.get().member_id;
    std::optional<std::error_code> beat_from_callback;
    coord->join_group(join_req("g", member), [&](join_group_result r) {
        beat_from_callback = beat("g", r.member_id, r.generation_id);
    });
    advance(cfg.initial_rebalance_delay_ms);
    ASSERT_TRUE(beat_from_callback);
    EXPECT_FALSE(*beat_from_callback) << beat_from_callback->message();
}

TEST_F(GroupTest, SlowPendingTransactionCheckDoesNotHoldTheGroup) {
    // OffsetFetch with require_stable asks the transaction coordinator about every partition;
    // a slow answer holds no group's lock: group g's own heartbeat and commits go on.
    auto [member, gen] = stable_single("g");
    commit("g", gen, member, {{0, 5}});
    std::promise<void> entered;
    std::promise<void> unblock;
    auto unblocked = unblock.get_future().share();
    std::atomic<bool> first_call{true};
    coord->set_pending_txn_offsets([&](const group_id&, const topic_name&, partition_id) {
        if (first_call.exchange(false)) {
            entered.set_value();
            unblocked.wait();
        }
        return false;
    });
    auto fetch = std::async(std::launch::async, [&] {
        offset_fetch_request r;
        r.group_id = group_id("g");
        r.require_stable = true;
        return coord->fetch_offsets_now({r});
    });
    entered.get_future().wait();

    auto other = std::async(std::launch::async, [&] {
        std::error_code beat_ec = beat("g", member, gen);
        auto c = commit("g", gen, member, {{1, 7}});
        auto b = commit("b", -1, "", {{0, 9}});
        return std::vector<std::error_code>{beat_ec, c.topics[0].partitions[0].error.code,
                                            b.topics[0].partitions[0].error.code};
    });
    const bool done = other.wait_for(deadlock_guard) == std::future_status::ready;
    unblock.set_value();
    auto fetched = fetch.get();
    ASSERT_TRUE(done) << "group g was held while the transaction check ran";
    for (const auto& ec : other.get()) {
        EXPECT_FALSE(ec) << ec.message();
    }
    ASSERT_EQ(fetched.size(), 1u);
    EXPECT_FALSE(fetched[0].error);
    EXPECT_EQ(committed("g", 1), 7);
}

TEST_F(GroupTest, TickerOnAnExecutorEndsTheInitialRebalanceDelay) {
    // With an executor, nobody calls run_timers(): the ticker's timer wakes up for the barrier
    // (a delay of 0 is due at once, so nothing here waits for time to pass).
    coord->stop();
    coord.reset();
    cfg.initial_rebalance_delay_ms = 0;
    boost::asio::io_context io;
    auto work = boost::asio::make_work_guard(io);
    std::thread ticker_thread([&] { io.run(); });
    coord = std::make_unique<group_coordinator>(*log, cfg);  // the system clock
    coord->start(io.get_executor(), true);

    auto r = join_req("g", "");
    r.require_known_member_id = false;
    std::promise<join_group_result> joined;
    coord->join_group(r, [&](join_group_result j) { joined.set_value(std::move(j)); });
    auto result = joined.get_future();
    const bool done = result.wait_for(deadlock_guard) == std::future_status::ready;
    coord->stop();  // before the executor's thread ends, as the server does
    work.reset();
    ticker_thread.join();
    ASSERT_TRUE(done) << "the ticker never completed the barrier";
    auto j = result.get();
    EXPECT_FALSE(j.error) << j.error.text();
    EXPECT_EQ(j.generation_id, 1);
}

TEST_F(GroupTest, ManyGroupsRebalanceInParallelWithCommits) {
    // Threads join, sync and leave their own groups while another thread commits: every call
    // is answered and every commit lands (a smoke test of the per-group locking under load).
    constexpr int groups = 8;
    constexpr int rounds = 20;
    cfg.initial_rebalance_delay_ms = 0;
    restart();
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int i = 0; i < groups; ++i) {
        threads.emplace_back([&, i] {
            const std::string g = "g" + std::to_string(i);
            for (int round = 0; round < rounds; ++round) {
                auto r = join_req(g, "");
                r.require_known_member_id = false;
                std::promise<join_group_result> p;
                coord->join_group(r, [&p](join_group_result j) { p.set_value(std::move(j)); });
                auto fut = p.get_future();
                // The initial delay is 0, but a timer still ends it: run it from here.
                while (fut.wait_for(std::chrono::milliseconds(0)) != std::future_status::ready) {
                    coord->run_timers();
                    std::this_thread::yield();
                }
                auto j = fut.get();
                if (j.error) {
                    ++failures;
                    continue;
                }
                std::promise<sync_group_result> sp;
                sync_group_request s;
                s.group_id = group_id(g);
                s.member_id = j.member_id;
                s.generation_id = j.generation_id;
                s.assignments[j.member_id] = assignment("t", {0});
                coord->sync_group(s, [&sp](sync_group_result v) { sp.set_value(std::move(v)); });
                if (sp.get_future().get().error) {
                    ++failures;
                }
                auto left = coord->leave_group_now(group_id(g), {{j.member_id, {}, {}}});
                if (left.error || left.members.at(0).error) {
                    ++failures;
                }
            }
        });
    }
    std::int64_t last = -1;
    for (int i = 0; i < 200; ++i) {
        auto c = commit("committer", -1, "", {{0, i}});
        if (c.topics[0].partitions[0].error) {
            ++failures;
        }
        last = i;
    }
    for (auto& t : threads) {
        t.join();
    }
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(committed("committer", 0), last);
    EXPECT_GE(coord->counters().rebalances, static_cast<std::uint64_t>(groups * rounds));
}

}  // namespace
}  // namespace sluice::backend::group::test
