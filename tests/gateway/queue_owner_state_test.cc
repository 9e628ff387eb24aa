// The SQS fleet's ownership state machine (gateway/server/queue_owner_state.h): claims, stale
// claims, releases, fencing.
#include "gateway/server/queue_owner_state.h"

#include <gtest/gtest.h>

namespace sluice::gateway {
namespace {

using action = queue_owner_state::action;
using phase = queue_owner_state::phase;

TEST(QueueOwnerState, AssignedUnitIsClaimedThenServed) {
    queue_owner_state s;
    EXPECT_EQ(s.assignment_changed(false), action::none);
    EXPECT_EQ(s.assignment_changed(true), action::claim);
    EXPECT_EQ(s.current(), phase::claiming);
    EXPECT_FALSE(s.serving());
    const auto id = s.claim_id();
    // The same assignment again (a callback repeated) claims nothing more.
    EXPECT_EQ(s.assignment_changed(true), action::none);
    EXPECT_TRUE(s.claimed(id));
    EXPECT_TRUE(s.serving());
}

TEST(QueueOwnerState, LosingTheUnitReleasesAtOnce) {
    queue_owner_state s;
    s.assignment_changed(true);
    ASSERT_TRUE(s.claimed(s.claim_id()));
    EXPECT_EQ(s.assignment_changed(false), action::release);
    EXPECT_EQ(s.current(), phase::follower);
    EXPECT_FALSE(s.serving());
    EXPECT_EQ(s.assignment_changed(false), action::none);
}

TEST(QueueOwnerState, AClaimThatEndsAfterTheUnitMovedOnIsDropped) {
    queue_owner_state s;
    s.assignment_changed(true);
    const auto first = s.claim_id();
    EXPECT_EQ(s.assignment_changed(false), action::release);  // a rebalance began
    EXPECT_EQ(s.assignment_changed(true), action::claim);     // and gave it back
    const auto second = s.claim_id();
    EXPECT_NE(first, second);
    EXPECT_FALSE(s.claimed(first));  // the first claim's queues are never served
    EXPECT_FALSE(s.serving());
    EXPECT_TRUE(s.claimed(second));
    EXPECT_TRUE(s.serving());
}

TEST(QueueOwnerState, AFailedClaimIsRetriedOnlyWhileTheUnitIsHeld) {
    queue_owner_state s;
    s.assignment_changed(true);
    const auto first = s.claim_id();
    EXPECT_EQ(s.claim_failed(first), action::claim);
    const auto second = s.claim_id();
    EXPECT_NE(first, second);
    EXPECT_EQ(s.claim_failed(first), action::none);  // stale
    s.assignment_changed(false);
    EXPECT_EQ(s.claim_failed(second), action::none);
    EXPECT_EQ(s.current(), phase::follower);
}

TEST(QueueOwnerState, AFencedOwnerIsDeposedAndNeverClaimsUntilTheGroupMovesOn) {
    queue_owner_state s;
    s.assignment_changed(true);
    const auto id = s.claim_id();
    ASSERT_TRUE(s.claimed(id));
    EXPECT_EQ(s.fenced(id), action::release);
    EXPECT_EQ(s.current(), phase::deposed);
    EXPECT_FALSE(s.serving());
    // Its member still believes it holds the unit: claiming again would fence the new owner.
    EXPECT_EQ(s.assignment_changed(true), action::none);
    EXPECT_EQ(s.fenced(id), action::none);
    // The group takes the unit away, and may give it back later: a fresh claim.
    EXPECT_EQ(s.assignment_changed(false), action::none);
    EXPECT_EQ(s.current(), phase::follower);
    EXPECT_EQ(s.assignment_changed(true), action::claim);
}

TEST(QueueOwnerState, AStaleClaimsFencingChangesNothing) {
    queue_owner_state s;
    s.assignment_changed(true);
    const auto first = s.claim_id();
    ASSERT_TRUE(s.claimed(first));
    s.assignment_changed(false);
    s.assignment_changed(true);
    const auto second = s.claim_id();
    ASSERT_TRUE(s.claimed(second));
    // The first claim's log reports its late refusal: the second claim serves on.
    EXPECT_EQ(s.fenced(first), action::none);
    EXPECT_TRUE(s.serving());
}

}  // namespace
}  // namespace sluice::gateway
