#include "tests/backend/producer/producer_test_support.h"

namespace sluice::backend::producer::test {
namespace {

constexpr std::int64_t pid = 1000;

TEST_F(ProducerTest, InSequenceBatchesAreAppended) {
    auto a = produce(producer_batch(pid, 0, 0, 3));
    ASSERT_TRUE(a);
    auto b = produce(producer_batch(pid, 0, 3, 2));
    ASSERT_TRUE(b);
    EXPECT_EQ(b->base_offset.value, 3);
    EXPECT_EQ(state()->entry(pid)->last_seq(), 4);
}

TEST_F(ProducerTest, RetryOfOneOfTheLastFiveBatchesGetsItsOriginalOffsets) {
    for (int i = 0; i < 6; ++i) {
        ASSERT_TRUE(produce(producer_batch(pid, 0, i * 2, 2)));
    }
    const auto end = part()->log_end_offset();
    auto dup = produce(producer_batch(pid, 0, 4, 2));  // the third batch: offsets 4-5
    ASSERT_TRUE(dup);
    EXPECT_TRUE(dup->duplicate);
    EXPECT_EQ(dup->base_offset.value, 4);
    EXPECT_EQ(dup->last_offset.value, 5);
    EXPECT_EQ(part()->log_end_offset(), end);  // nothing written
}

TEST_F(ProducerTest, RetryOlderThanTheLastFiveIsOutOfOrder) {
    for (int i = 0; i < 6; ++i) {
        ASSERT_TRUE(produce(producer_batch(pid, 0, i)));
    }
    auto old = produce(producer_batch(pid, 0, 0));
    ASSERT_FALSE(old);
    EXPECT_EQ(old.error(), make_error_code(errc::out_of_order_sequence));
}

TEST_F(ProducerTest, SequenceGapIsOutOfOrder) {
    ASSERT_TRUE(produce(producer_batch(pid, 0, 0)));
    auto gap = produce(producer_batch(pid, 0, 2));
    ASSERT_FALSE(gap);
    EXPECT_EQ(gap.error(), make_error_code(errc::out_of_order_sequence));
    EXPECT_EQ(part()->log_end_offset().value, 1);
}

TEST_F(ProducerTest, OlderEpochIsFenced) {
    ASSERT_TRUE(produce(producer_batch(pid, 3, 0)));
    auto old = produce(producer_batch(pid, 2, 1));
    ASSERT_FALSE(old);
    EXPECT_EQ(old.error(), make_error_code(errc::invalid_producer_epoch));
}

TEST_F(ProducerTest, NewEpochMustStartAtSequenceZero) {
    ASSERT_TRUE(produce(producer_batch(pid, 0, 0, 5)));
    auto bad = produce(producer_batch(pid, 1, 5));
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error(), make_error_code(errc::out_of_order_sequence));
    EXPECT_TRUE(produce(producer_batch(pid, 1, 0)));
}

TEST_F(ProducerTest, UnknownProducerMayStartAtAnySequence) {
    // compat: Kafka 3.x accepts it (the producer's entry may have expired).
    EXPECT_TRUE(produce(producer_batch(pid, 0, 4242)));
    EXPECT_TRUE(produce(producer_batch(pid, 0, 4243)));
}

TEST_F(ProducerTest, SequenceWrapsAtTwoToTheThirtyOne) {
    const std::int32_t max = std::numeric_limits<std::int32_t>::max();
    ASSERT_TRUE(produce(producer_batch(pid, 0, max - 1, 2)));  // max-1, max
    auto wrapped = produce(producer_batch(pid, 0, 0, 3));
    ASSERT_TRUE(wrapped) << wrapped.error().message();
    EXPECT_EQ(state()->entry(pid)->last_seq(), 2);
    // A batch spanning the wrap: base max-1 with 4 records ends at sequence 1.
    auto e = state()->entry(pid);
    EXPECT_EQ(e->batches.back().first_seq, 0);
}

TEST_F(ProducerTest, StateIsRebuiltFromTheLogAfterARestart) {
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(produce(producer_batch(pid, 0, i)));
    }
    // No snapshot: drop the states without stopping the manager cleanly.
    txn.reset();
    states.reset();
    log->close();
    log.reset();
    open();
    auto dup = produce(producer_batch(pid, 0, 2));
    ASSERT_TRUE(dup);
    EXPECT_TRUE(dup->duplicate);
    EXPECT_TRUE(produce(producer_batch(pid, 0, 3)));
}

TEST_F(ProducerTest, SnapshotShortensTheReplay) {
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(produce(producer_batch(pid, 0, i)));
    }
    EXPECT_EQ(states->write_snapshots(), 1u);
    auto names = fs->list(part()->dir());
    ASSERT_TRUE(names);
    EXPECT_TRUE(std::count(names->begin(), names->end(), snapshot_file_name(3)) == 1);
    reopen();
    EXPECT_EQ(state()->snapshot_end(), 3);
    EXPECT_EQ(state()->entry(pid)->last_seq(), 2);
    auto dup = produce(producer_batch(pid, 0, 1));
    ASSERT_TRUE(dup);
    EXPECT_TRUE(dup->duplicate);
}

TEST_F(ProducerTest, SnapshotRoundTrips) {
    ASSERT_TRUE(produce(producer_batch(pid, 2, 0, 4)));
    std::int64_t end = 0;
    auto bytes = state()->encode_snapshot(end);
    partition_producer_state copy("t", partition_id(0));
    ASSERT_TRUE(copy.load_snapshot(bytes.view()));
    EXPECT_EQ(copy.end_offset(), 4);
    EXPECT_EQ(copy.entry(pid)->epoch, 2);
    EXPECT_EQ(copy.entry(pid)->last_seq(), 3);
    // One flipped byte is noticed.
    auto damaged = bytes;
    damaged.mutable_view()[damaged.size() - 1] ^= std::byte{1};
    EXPECT_FALSE(copy.load_snapshot(damaged.view()));
}

TEST_F(ProducerTest, TransactionalDataNeedsTheCoordinatorsVerification) {
    auto r = produce(producer_batch(pid, 0, 0, 1, true), 0, false);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), make_error_code(errc::invalid_txn_state));
}

TEST_F(ProducerTest, IdleProducersExpire) {
    ASSERT_TRUE(produce(producer_batch(pid, 0, 0)));
    clock.advance(producer_state_settings{}.producer_id_expiration_ms + 1);
    // The batch timestamp is from 2023; "now" is the manual clock.
    EXPECT_EQ(states->expire_producers(), 1u);
    EXPECT_FALSE(state()->entry(pid));
}

}  // namespace
}  // namespace sluice::backend::producer::test
