// The queue state machine on its own: manual time (every call takes `now`), no I/O.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/queue/queue_state.h"

namespace sluice::backend::queue {
namespace {

constexpr std::int64_t t0 = 1'700'000'000'000;

std::shared_ptr<const stored_message> msg(std::string body, std::int64_t sent = t0,
                                          std::optional<std::string> group = std::nullopt,
                                          std::int64_t visible_from = 0) {
    auto m = std::make_shared<stored_message>();
    m->body = std::move(body);
    m->sent_ms = sent;
    m->group_id = std::move(group);
    m->visible_from_ms = visible_from;
    return m;
}

queue_config standard() { return queue_config{}; }

queue_config fifo() {
    queue_config c;
    c.fifo = true;
    return c;
}

std::vector<std::int64_t> offsets_of(const select_result& r) {
    std::vector<std::int64_t> out;
    for (const auto& m : r.messages) {
        out.push_back(m.ref.offset);
    }
    return out;
}

std::vector<std::string> bodies_of(const select_result& r) {
    std::vector<std::string> out;
    for (const auto& m : r.messages) {
        out.push_back(m.body ? m.body->body : "<unloaded>");
    }
    return out;
}

bool has(const change_list& changes, state_change::kind k, std::int64_t offset) {
    return std::any_of(changes.begin(), changes.end(), [&](const state_change& c) {
        return c.what == k && c.ref.offset == offset;
    });
}

TEST(QueueState, SelectHandsOutAvailableMessagesInOrder) {
    queue_state q(1, standard());
    for (int i = 0; i < 5; ++i) {
        EXPECT_TRUE(q.add({0, i}, msg("m" + std::to_string(i)), t0));
    }
    change_list ch;
    auto r = q.select(3, 30000, t0, std::nullopt, ch);

    EXPECT_EQ(bodies_of(r), (std::vector<std::string>{"m0", "m1", "m2"}));
    EXPECT_EQ(r.messages[0].receive_count, 1);
    EXPECT_EQ(r.messages[0].first_receive_ms, t0);
    EXPECT_TRUE(has(ch, state_change::kind::message, 0));
    EXPECT_EQ(q.counts(t0).available, 2);
    EXPECT_EQ(q.counts(t0).in_flight, 3);
}

TEST(QueueState, InFlightMessageReturnsAfterItsVisibilityTimeoutWithAHigherCount) {
    queue_state q(1, standard());
    q.add({0, 0}, msg("a"), t0);
    change_list ch;
    q.select(1, 30000, t0, std::nullopt, ch);

    EXPECT_TRUE(q.select(1, 30000, t0 + 29999, std::nullopt, ch).messages.empty());
    auto again = q.select(1, 30000, t0 + 30000, std::nullopt, ch);

    ASSERT_EQ(again.messages.size(), 1u);
    EXPECT_EQ(again.messages[0].receive_count, 2);
    EXPECT_EQ(again.messages[0].first_receive_ms, t0);
    EXPECT_EQ(again.messages[0].body, nullptr);  // read from the topic again
}

TEST(QueueState, DeletingTheOldestMovesTheCursorAndTombstonesItsRecord) {
    queue_state q(1, standard());
    q.add({0, 0}, msg("a"), t0);
    q.add({0, 1}, msg("b"), t0);
    change_list ch;
    q.select(1, 30000, t0, std::nullopt, ch);
    ch.clear();

    EXPECT_EQ(q.remove({0, 0}, 1, t0, ch), handle_outcome::done);

    EXPECT_TRUE(has(ch, state_change::kind::tombstone, 0));
    EXPECT_TRUE(has(ch, state_change::kind::cursor, 1));
    EXPECT_EQ(q.cursor(0), 1);
}

TEST(QueueState, DeletingOutOfOrderPersistsTheDeletionUntilTheCursorPasses) {
    queue_state q(1, standard());
    q.add({0, 0}, msg("a"), t0);
    q.add({0, 1}, msg("b"), t0);
    change_list ch;
    q.select(2, 30000, t0, std::nullopt, ch);
    ch.clear();

    q.remove({0, 1}, 1, t0, ch);
    ASSERT_EQ(ch.size(), 1u);
    EXPECT_EQ(ch[0].what, state_change::kind::message);
    EXPECT_EQ(ch[0].phase, stored_phase::deleted);
    ch.clear();

    q.remove({0, 0}, 1, t0, ch);
    EXPECT_TRUE(has(ch, state_change::kind::tombstone, 0));
    EXPECT_TRUE(has(ch, state_change::kind::tombstone, 1));
    EXPECT_TRUE(has(ch, state_change::kind::cursor, 2));
}

TEST(QueueState, AStaleHandleDeletesNothingOnAStandardQueue) {
    queue_state q(1, standard());
    q.add({0, 0}, msg("a"), t0);
    change_list ch;
    q.select(1, 0, t0, std::nullopt, ch);       // receive 1, visible again at once
    q.select(1, 30000, t0 + 1, std::nullopt, ch);  // receive 2

    EXPECT_EQ(q.remove({0, 0}, 1, t0 + 2, ch), handle_outcome::stale);
    EXPECT_EQ(q.counts(t0 + 2).in_flight, 1);
    EXPECT_EQ(q.remove({0, 0}, 2, t0 + 2, ch), handle_outcome::done);
    EXPECT_EQ(q.counts(t0 + 2).in_flight, 0);
}

TEST(QueueState, AnExpiredHandleIsRefusedOnAFifoQueue) {
    queue_state q(1, fifo());
    q.add({0, 0}, msg("a", t0, "g"), t0);
    change_list ch;
    q.select(1, 1000, t0, std::nullopt, ch);

    EXPECT_EQ(q.remove({0, 0}, 1, t0 + 1000, ch), handle_outcome::expired);
}

TEST(QueueState, DeletingADeletedMessageSucceeds) {
    queue_state q(1, standard());
    q.add({0, 0}, msg("a"), t0);
    change_list ch;
    q.select(1, 30000, t0, std::nullopt, ch);
    q.remove({0, 0}, 1, t0, ch);

    EXPECT_EQ(q.remove({0, 0}, 1, t0, ch), handle_outcome::done);
    EXPECT_EQ(q.change_visibility({0, 0}, 1, 0, t0, ch), handle_outcome::gone);
}

TEST(QueueState, ADelayedMessageBecomesAvailableWhenItsDelayEnds) {
    queue_state q(1, standard());
    EXPECT_FALSE(q.add({0, 0}, msg("late", t0, std::nullopt, t0 + 5000), t0));
    change_list ch;

    EXPECT_TRUE(q.select(1, 30000, t0 + 4999, std::nullopt, ch).messages.empty());
    EXPECT_EQ(q.counts(t0 + 4999).delayed, 1);
    EXPECT_EQ(q.next_due(), t0 + 5000);
    EXPECT_EQ(bodies_of(q.select(1, 30000, t0 + 5000, std::nullopt, ch)),
              (std::vector<std::string>{"late"}));
}

TEST(QueueState, MessagesPastTheRetentionPeriodAreNeverDelivered) {
    auto c = standard();
    c.retention_s = 60;
    queue_state q(1, c);
    q.add({0, 0}, msg("old", t0), t0);
    q.add({0, 1}, msg("new", t0 + 30000), t0 + 30000);
    change_list ch;

    auto r = q.select(10, 30000, t0 + 60000, std::nullopt, ch);

    EXPECT_EQ(bodies_of(r), (std::vector<std::string>{"new"}));
    EXPECT_EQ(q.cursor(0), 1);
}

TEST(QueueState, ChangingVisibilityToZeroMakesTheMessageAvailableAtOnce) {
    queue_state q(1, standard());
    q.add({0, 0}, msg("a"), t0);
    change_list ch;
    q.select(1, 30000, t0, std::nullopt, ch);

    EXPECT_EQ(q.change_visibility({0, 0}, 1, 0, t0 + 1, ch), handle_outcome::done);

    EXPECT_EQ(offsets_of(q.select(1, 30000, t0 + 1, std::nullopt, ch)), (std::vector<std::int64_t>{0}));
}

TEST(QueueState, VisibilityCannotReachPastTwelveHoursAfterTheReceive) {
    queue_state q(1, standard());
    q.add({0, 0}, msg("a"), t0);
    change_list ch;
    q.select(1, 30000, t0, std::nullopt, ch);

    EXPECT_EQ(q.change_visibility({0, 0}, 1, 43200000, t0 + 1000, ch), handle_outcome::too_long);
    EXPECT_EQ(q.change_visibility({0, 0}, 1, 43199000, t0 + 1000, ch), handle_outcome::done);
}

TEST(QueueState, FifoDeliversAGroupInOrderOneReceiveAtATime) {
    queue_state q(1, fifo());
    for (int i = 0; i < 4; ++i) {
        q.add({0, i}, msg("g" + std::to_string(i), t0, "g"), t0);
    }
    change_list ch;
    auto first = q.select(2, 30000, t0, std::nullopt, ch);
    EXPECT_EQ(bodies_of(first), (std::vector<std::string>{"g0", "g1"}));

    // The rest of the group waits until these are deleted.
    EXPECT_TRUE(q.select(2, 30000, t0, std::nullopt, ch).messages.empty());
    q.remove({0, 0}, 1, t0, ch);
    EXPECT_TRUE(q.select(2, 30000, t0, std::nullopt, ch).messages.empty());
    q.remove({0, 1}, 1, t0, ch);

    EXPECT_EQ(bodies_of(q.select(2, 30000, t0, std::nullopt, ch)),
              (std::vector<std::string>{"g2", "g3"}));
}

TEST(QueueState, FifoGroupsDoNotHoldEachOtherBack) {
    queue_state q(1, fifo());
    q.add({0, 0}, msg("a0", t0, "a"), t0);
    q.add({0, 1}, msg("a1", t0, "a"), t0);
    q.add({0, 2}, msg("b0", t0, "b"), t0);
    change_list ch;
    EXPECT_EQ(bodies_of(q.select(1, 30000, t0, std::nullopt, ch)), (std::vector<std::string>{"a0"}));

    EXPECT_EQ(bodies_of(q.select(1, 30000, t0, std::nullopt, ch)), (std::vector<std::string>{"b0"}));
}

TEST(QueueState, FifoRedeliversAnExpiredGroupHeadBeforeTheRest) {
    queue_state q(1, fifo());
    q.add({0, 0}, msg("a0", t0, "a"), t0);
    q.add({0, 1}, msg("a1", t0, "a"), t0);
    change_list ch;
    q.select(1, 1000, t0, std::nullopt, ch);

    auto again = q.select(2, 1000, t0 + 1000, std::nullopt, ch);

    EXPECT_EQ(offsets_of(again), (std::vector<std::int64_t>{0, 1}));
    EXPECT_EQ(again.messages[0].receive_count, 2);
}

TEST(QueueState, ADelayedFifoHeadHoldsItsGroup) {
    queue_state q(1, fifo());
    q.add({0, 0}, msg("a0", t0, "a", t0 + 1000), t0);
    q.add({0, 1}, msg("a1", t0, "a"), t0);
    change_list ch;

    EXPECT_TRUE(q.select(2, 30000, t0, std::nullopt, ch).messages.empty());
    EXPECT_EQ(offsets_of(q.select(2, 30000, t0 + 1000, std::nullopt, ch)),
              (std::vector<std::int64_t>{0, 1}));
}

TEST(QueueState, AFifoRetryWithTheSameAttemptIdGetsTheSameMessages) {
    queue_state q(1, fifo());
    q.add({0, 0}, msg("a0", t0, "a"), t0);
    q.add({0, 1}, msg("b0", t0, "b"), t0);
    change_list ch;
    auto first = q.select(1, 30000, t0, std::string("attempt-1"), ch);

    auto retry = q.select(1, 30000, t0 + 10, std::string("attempt-1"), ch);

    EXPECT_EQ(offsets_of(retry), offsets_of(first));
    EXPECT_EQ(retry.messages[0].receive_count, first.messages[0].receive_count);
    EXPECT_EQ(offsets_of(q.select(1, 30000, t0 + 10, std::string("attempt-2"), ch)),
              (std::vector<std::int64_t>{1}));
}

TEST(QueueState, FairQueuesPreferGroupsWithFewerMessagesInFlight) {
    queue_state q(1, standard());
    for (int i = 0; i < 6; ++i) {
        q.add({0, i}, msg("busy" + std::to_string(i), t0, "busy"), t0);
    }
    change_list ch;
    q.select(2, 30000, t0, std::nullopt, ch);  // two of the busy group in flight
    q.add({0, 6}, msg("quiet", t0, "quiet"), t0);

    auto r = q.select(2, 30000, t0, std::nullopt, ch);

    // The newer message of the idle group goes first; the busy group still gets its turn.
    EXPECT_EQ(bodies_of(r), (std::vector<std::string>{"quiet", "busy2"}));
}

TEST(QueueState, AReceiveGivenBackIsUndoneAndTheMessageIsAvailableAtOnce) {
    auto c = standard();
    c.redrive = redrive_policy{"arn:aws:sqs:us-east-1:000000000000:dlq", "dlq", 2};
    queue_state q(1, c);
    q.add({0, 0}, msg("a"), t0);
    change_list ch;
    q.select(1, 1000, t0, std::nullopt, ch);
    // The redelivery's record cannot be read now: the receive is undone, every time.
    for (int i = 0; i < 3; ++i) {
        auto again = q.select(1, 1000, t0 + 1000, std::nullopt, ch);
        ASSERT_EQ(again.messages.size(), 1u);
        EXPECT_FALSE(again.messages[0].dead_letter);
        EXPECT_EQ(again.messages[0].receive_count, 2);
        ch.clear();
        EXPECT_TRUE(q.give_back({0, 0}, 2, t0 + 1000, ch));
        EXPECT_TRUE(has(ch, state_change::kind::message, 0));
        EXPECT_EQ(q.counts(t0 + 1000).available, 1);
        EXPECT_EQ(q.counts(t0 + 1000).in_flight, 0);
    }
    // A handle of another receive, or a message not in flight, is not given back.
    EXPECT_FALSE(q.give_back({0, 0}, 2, t0 + 1000, ch));
    q.select(1, 1000, t0 + 1000, std::nullopt, ch);
    EXPECT_FALSE(q.give_back({0, 0}, 1, t0 + 1000, ch));
    EXPECT_FALSE(q.give_back({0, 7}, 2, t0 + 1000, ch));
}

TEST(QueueState, AGivenBackFifoHeadKeepsItsGroupInOrder) {
    queue_state q(1, fifo());
    q.add({0, 0}, msg("a", t0, "g"), t0);
    q.add({0, 1}, msg("b", t0, "g"), t0);
    change_list ch;
    auto first = q.select(1, 1000, t0, std::nullopt, ch);
    ASSERT_EQ(bodies_of(first), std::vector<std::string>{"a"});
    ASSERT_TRUE(q.give_back({0, 0}, 1, t0, ch));
    auto again = q.select(1, 1000, t0, std::nullopt, ch);
    EXPECT_EQ(offsets_of(again), std::vector<std::int64_t>{0});
    EXPECT_EQ(again.messages[0].receive_count, 1);
}

TEST(QueueState, AFifoReceiveGivenBackWholeLeavesTheGroupInOrder) {
    queue_state q(1, fifo());
    for (int i = 0; i < 4; ++i) {
        q.add({0, i}, msg("m" + std::to_string(i), t0, "g"), t0);
    }
    change_list ch;
    // The first two received and deleted one, the other's visibility ends.
    auto first = q.select(2, 1000, t0, std::nullopt, ch);
    ASSERT_EQ(offsets_of(first), (std::vector<std::int64_t>{0, 1}));
    EXPECT_EQ(q.remove({0, 0}, 1, t0, ch), handle_outcome::done);
    auto second = q.select(10, 1000, t0 + 1000, std::nullopt, ch);
    ASSERT_EQ(offsets_of(second), (std::vector<std::int64_t>{1, 2, 3}));
    // Message 1 cannot be read now: the whole receive goes back, in any order.
    EXPECT_TRUE(q.give_back({0, 1}, 2, t0 + 1000, ch));
    EXPECT_TRUE(q.give_back({0, 3}, 1, t0 + 1000, ch));
    EXPECT_TRUE(q.give_back({0, 2}, 1, t0 + 1000, ch));
    auto third = q.select(10, 1000, t0 + 1000, std::nullopt, ch);
    EXPECT_EQ(offsets_of(third), (std::vector<std::int64_t>{1, 2, 3}));
    // While any is in flight, nothing of the group is handed out.
    EXPECT_TRUE(q.give_back({0, 3}, 1, t0 + 1000, ch));
    EXPECT_TRUE(q.select(10, 1000, t0 + 1000, std::nullopt, ch).messages.empty());
}

TEST(QueueState, MessagesPastMaxReceiveCountAreDeadLettered) {
    auto c = standard();
    c.redrive = redrive_policy{"arn:aws:sqs:us-east-1:000000000000:dlq", "dlq", 2};
    queue_state q(1, c);
    q.add({0, 0}, msg("poison"), t0);
    change_list ch;
    q.select(1, 1000, t0, std::nullopt, ch);
    q.select(1, 1000, t0 + 1000, std::nullopt, ch);

    auto third = q.select(1, 1000, t0 + 2000, std::nullopt, ch);
    ASSERT_EQ(third.messages.size(), 1u);
    EXPECT_TRUE(third.messages[0].dead_letter);
    EXPECT_EQ(third.messages[0].receive_count, 2);

    q.dead_lettered({0, 0}, ch);
    EXPECT_EQ(q.cursor(0), 1);
    EXPECT_EQ(q.counts(t0 + 2000).in_flight, 0);
}

TEST(QueueState, ARestoredReceivedMessageStaysInFlightUntilItsDeadline) {
    queue_state q(1, standard());
    q.restore_cursor(0, 10);
    q.restore_message({uuid{}, 0, 11, stored_phase::received, 3, t0 + 5000, t0 - 100});
    q.restore_message({uuid{}, 0, 12, stored_phase::deleted, 1, 0, t0 - 100});
    change_list ch;
    q.clamp(0, 0, 13, ch);
    EXPECT_TRUE(ch.empty());

    q.add({0, 10}, msg("fresh"), t0);
    EXPECT_FALSE(q.add({0, 11}, msg("received"), t0));
    EXPECT_FALSE(q.add({0, 12}, msg("deleted"), t0));

    EXPECT_EQ(bodies_of(q.select(10, 30000, t0, std::nullopt, ch)), (std::vector<std::string>{"fresh"}));
    auto later = q.select(10, 30000, t0 + 5000, std::nullopt, ch);
    ASSERT_EQ(offsets_of(later), (std::vector<std::int64_t>{11}));
    EXPECT_EQ(later.messages[0].receive_count, 4);
}

TEST(QueueState, ClampDropsRecordsOfOffsetsACrashCutFromTheTopic) {
    queue_state q(1, standard());
    q.restore_cursor(0, 5);
    q.restore_message({uuid{}, 0, 7, stored_phase::deleted, 1, 0, t0});
    change_list ch;

    q.clamp(0, 0, 6, ch);  // the topic ends at 6 after the crash

    EXPECT_TRUE(has(ch, state_change::kind::tombstone, 7));
    q.add({0, 6}, msg("reused offset"), t0);
    q.add({0, 7}, msg("reused offset too"), t0);
    EXPECT_EQ(q.select(10, 30000, t0, std::nullopt, ch).messages.size(), 2u);
}

TEST(QueueState, ClampMovesACursorBelowTheLogStartUp) {
    queue_state q(1, standard());
    q.restore_cursor(0, 3);
    change_list ch;

    q.clamp(0, 10, 20, ch);

    EXPECT_EQ(q.fetch_position(0), 10);
    EXPECT_TRUE(has(ch, state_change::kind::cursor, 10));
}

TEST(QueueState, ADeleteAfterARestartBeforeTheMessageIsReadAgainIsKept) {
    queue_state q(1, standard());
    q.restore_cursor(0, 0);
    q.restore_message({uuid{}, 0, 0, stored_phase::received, 1, t0 + 30000, t0});
    change_list ch;
    q.clamp(0, 0, 1, ch);

    EXPECT_EQ(q.remove({0, 0}, 1, t0, ch), handle_outcome::done);
    EXPECT_FALSE(q.add({0, 0}, msg("a"), t0));
    EXPECT_TRUE(q.select(1, 30000, t0 + 60000, std::nullopt, ch).messages.empty());
}

TEST(QueueState, PurgeDeletesEverythingBelowTheLogEnds) {
    queue_state q(1, standard());
    q.add({0, 0}, msg("a"), t0);
    q.add({0, 1}, msg("b"), t0);
    change_list ch;
    q.select(1, 30000, t0, std::nullopt, ch);
    ch.clear();

    q.purge({5}, ch);  // offsets 2-4 are not read yet

    EXPECT_EQ(q.fetch_position(0), 5);
    EXPECT_TRUE(has(ch, state_change::kind::tombstone, 0));
    EXPECT_TRUE(has(ch, state_change::kind::cursor, 5));
    EXPECT_FALSE(q.add({0, 3}, msg("purged"), t0));
    EXPECT_EQ(q.counts(t0).available + q.counts(t0).in_flight, 0);
}

TEST(QueueState, TheReadAheadBudgetStopsReadingAndReceivesFreeIt) {
    queue_limits limits;
    limits.read_ahead_messages = 2;
    queue_state q(1, standard(), limits);
    q.add({0, 0}, msg("a"), t0);
    EXPECT_TRUE(q.wants_more());
    q.add({0, 1}, msg("b"), t0);
    EXPECT_FALSE(q.wants_more());
    change_list ch;

    q.select(1, 30000, t0, std::nullopt, ch);

    EXPECT_TRUE(q.wants_more());
}

TEST(QueueState, TooManyMessagesInFlightIsOverLimit) {
    queue_limits limits;
    limits.max_in_flight = 1;
    queue_state q(1, standard(), limits);
    q.add({0, 0}, msg("a"), t0);
    q.add({0, 1}, msg("b"), t0);
    change_list ch;
    q.select(1, 30000, t0, std::nullopt, ch);

    EXPECT_TRUE(q.select(1, 30000, t0, std::nullopt, ch).over_limit);
}

TEST(QueueState, PartitionsTakeTurns) {
    queue_state q(2, standard());
    q.add({0, 0}, msg("p0"), t0);
    q.add({1, 0}, msg("p1"), t0);
    change_list ch;

    auto a = q.select(1, 30000, t0, std::nullopt, ch);
    auto b = q.select(1, 30000, t0, std::nullopt, ch);

    ASSERT_EQ(a.messages.size(), 1u);
    ASSERT_EQ(b.messages.size(), 1u);
    EXPECT_NE(a.messages[0].ref.partition, b.messages[0].ref.partition);
}

TEST(QueueState, MoveTasksTakeOnlyWhatWasThereWhenTheyStarted) {
    queue_state q(1, standard());
    q.add({0, 0}, msg("a"), t0);
    q.add({0, 1}, msg("b"), t0);
    q.add({0, 2}, msg("after the start"), t0);
    change_list ch;

    auto taken = q.take_for_move(10, {2}, 60000, t0);

    EXPECT_EQ(taken.size(), 2u);
    EXPECT_TRUE(q.any_below({2}));
    q.dead_lettered({0, 0}, ch);
    q.dead_lettered({0, 1}, ch);
    EXPECT_FALSE(q.any_below({2}));
    EXPECT_EQ(taken[0].receive_count, 0);
}

TEST(QueueState, AReceiveOutsideTheStoredLeaseAsksForOneThatCoversIt) {
    queue_state q(1, standard());
    for (int i = 0; i < 5; ++i) {
        q.add({0, i}, msg("m" + std::to_string(i)), t0);
    }
    change_list ch;
    auto first = q.select(2, 30000, t0, std::nullopt, ch);
    change_list leases;
    EXPECT_FALSE(q.covered(first.messages, t0 + 30000, 1, 5000, leases));
    ASSERT_EQ(leases.size(), 1u);
    EXPECT_EQ(leases[0].what, state_change::kind::lease);
    EXPECT_EQ(leases[0].ref.offset, 3);  // past offset 1, one ahead
    EXPECT_EQ(leases[0].visible_at_ms, t0 + 35000);
    q.lease_stored(leases);

    auto second = q.select(1, 30000, t0 + 1000, std::nullopt, ch);  // offset 2
    change_list none;
    EXPECT_TRUE(q.covered(second.messages, t0 + 31000, 1, 5000, none));
    EXPECT_TRUE(none.empty());
    // A longer visibility timeout, or a message past `below`: a new lease, never a lower one.
    EXPECT_FALSE(q.covered(second.messages, t0 + 36000, 1, 5000, none));
    auto third = q.select(1, 30000, t0 + 1000, std::nullopt, ch);  // offset 3
    change_list more;
    EXPECT_FALSE(q.covered(third.messages, t0 + 31000, 1, 5000, more));
    ASSERT_EQ(more.size(), 1u);
    EXPECT_EQ(more[0].ref.offset, 5);
    EXPECT_EQ(more[0].visible_at_ms, t0 + 41000);  // the record asked for just before
}

TEST(QueueState, ALeaseRecordNeverFallsShortOfOneAppendedBeforeIt) {
    queue_state q(1, standard());
    for (int i = 0; i < 20; ++i) {
        q.add({0, i}, msg("m" + std::to_string(i)), t0);
    }
    change_list ch;
    // Two receives ask for leases before either is stored: the first a long timeout, the
    // second further offsets. The log keeps the second record: it must cover both.
    auto a = q.select(1, 60000, t0, std::nullopt, ch);
    change_list first;
    EXPECT_FALSE(q.covered(a.messages, t0 + 60000, 1, 5000, first));
    auto b = q.select(10, 1000, t0, std::nullopt, ch);
    change_list second;
    EXPECT_FALSE(q.covered(b.messages, t0 + 1000, 1, 5000, second));
    ASSERT_EQ(first.size(), 1u);
    ASSERT_EQ(second.size(), 1u);
    EXPECT_EQ(first[0].ref.offset, 2);
    EXPECT_EQ(first[0].visible_at_ms, t0 + 65000);
    EXPECT_EQ(second[0].ref.offset, 12);
    EXPECT_EQ(second[0].visible_at_ms, t0 + 65000);
}

TEST(QueueState, AReplayedLeaseHoldsWhatAnUnstoredReceiveMayHoldUntilItEnds) {
    queue_state q(1, standard());
    q.restore_cursor(0, 0);
    q.restore_lease({uuid{}, 0, 4, t0 + 10000});
    q.restore_message({uuid{}, 0, 1, stored_phase::received, 1, t0 + 2000, t0 - 100});
    q.restore_message({uuid{}, 0, 2, stored_phase::received, 1, t0 + 20000, t0 - 100});
    q.restore_message({uuid{}, 0, 3, stored_phase::deleted, 1, 0, t0 - 100});
    change_list ch;
    q.clamp(0, 0, 6, ch);
    for (int i = 0; i < 6; ++i) {
        q.add({0, i}, msg("m" + std::to_string(i)), t0);
    }
    // Below the lease: held to its end (0 never stored as received, 1's stored timeout ends
    // first), 2 in flight to its own later end, 3 deleted; 4 and 5 are past the lease.
    EXPECT_EQ(offsets_of(q.select(10, 30000, t0, std::nullopt, ch)),
              (std::vector<std::int64_t>{4, 5}));
    EXPECT_TRUE(q.select(10, 30000, t0 + 9999, std::nullopt, ch).messages.empty());
    auto after = q.select(10, 30000, t0 + 10000, std::nullopt, ch);
    EXPECT_EQ(offsets_of(after), (std::vector<std::int64_t>{0, 1}));
    EXPECT_EQ(after.messages[0].receive_count, 1);
    EXPECT_EQ(after.messages[1].receive_count, 2);
}

TEST(QueueState, TheHandleOfAnUnstoredReceiveDeletesAndChangesVisibility) {
    queue_state q(1, standard());
    q.restore_cursor(0, 0);
    q.restore_lease({uuid{}, 0, 2, t0 + 10000});
    change_list ch;
    q.clamp(0, 0, 2, ch);
    q.add({0, 0}, msg("a"), t0);
    q.add({0, 1}, msg("b"), t0);

    // Receive count 1: the receive the lease covered, whose record was lost.
    EXPECT_EQ(q.remove({0, 0}, 1, t0 + 1, ch), handle_outcome::done);
    EXPECT_TRUE(has(ch, state_change::kind::cursor, 1));
    EXPECT_EQ(q.change_visibility({0, 1}, 1, 60000, t0 + 1, ch), handle_outcome::done);
    EXPECT_TRUE(q.select(10, 30000, t0 + 10000, std::nullopt, ch).messages.empty());
    auto later = q.select(10, 30000, t0 + 60001, std::nullopt, ch);
    ASSERT_EQ(offsets_of(later), (std::vector<std::int64_t>{1}));
    EXPECT_EQ(later.messages[0].receive_count, 2);
    // An older handle than the stored receive stays stale.
    EXPECT_EQ(q.remove({0, 1}, 1, t0 + 60002, ch), handle_outcome::stale);
}

TEST(QueueState, EndingLeasesKeepsAReplayedHoldThatIsNotOver) {
    queue_state q(2, standard());
    q.restore_lease({uuid{}, 0, 7, t0 + 10000});
    q.restore_lease({uuid{}, 1, 3, t0 - 1});
    change_list ch;
    q.end_leases(t0, ch);
    ASSERT_EQ(ch.size(), 2u);
    EXPECT_EQ(ch[0].what, state_change::kind::lease);
    EXPECT_EQ(ch[0].ref.offset, 7);
    EXPECT_EQ(ch[0].visible_at_ms, t0 + 10000);
    EXPECT_EQ(ch[1].what, state_change::kind::lease_tombstone);
    EXPECT_EQ(ch[1].ref.partition, 1);
    // No lease of its own any more: every receive from now on waits for its records.
    q.add({0, 9}, msg("x"), t0);
    auto r = q.select(1, 1000, t0, std::nullopt, ch);
    change_list leases;
    EXPECT_FALSE(q.covered(r.messages, t0 + 1000, 0, 0, leases));
}

}  // namespace
}  // namespace sluice::backend::queue
