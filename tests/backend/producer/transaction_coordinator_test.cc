#include "tests/backend/producer/producer_test_support.h"

namespace sluice::backend::producer::test {
namespace {

TEST_F(ProducerTest, IdempotentProducersGetFreshIdsThatSurviveARestart) {
    auto a = run(txn->init_producer_id(std::nullopt, 60000, -1, -1));
    auto b = run(txn->init_producer_id(std::nullopt, 60000, 0, 0));  // platformatic's 0/0
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->epoch, 0);
    EXPECT_NE(a->producer_id, b->producer_id);
    reopen();
    auto c = run(txn->init_producer_id(std::nullopt, 60000, -1, -1));
    ASSERT_TRUE(c);
    EXPECT_GT(c->producer_id, b->producer_id);
}

TEST_F(ProducerTest, InitProducerIdBumpsTheEpochOfATransactionalId) {
    auto a = run(txn->init_producer_id("tx", 60000, -1, -1));
    auto b = run(txn->init_producer_id("tx", 60000, -1, -1));
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->producer_id, b->producer_id);
    EXPECT_EQ(b->epoch, a->epoch + 1);
    auto bad = run(txn->init_producer_id("tx", 999999999, -1, -1));
    EXPECT_EQ(bad.error(), make_error_code(errc::invalid_transaction_timeout));
}

TEST_F(ProducerTest, CommittedTransactionMovesTheLastStableOffset) {
    auto p = run(txn->init_producer_id("tx", 60000, -1, -1));
    ASSERT_TRUE(p);
    auto added = run(txn->add_partitions("tx", p->producer_id, p->epoch, {{"t", 0}}, false));
    ASSERT_FALSE(added[0]);
    ASSERT_FALSE(produce_txn("tx", p->producer_id, p->epoch, 0));
    ASSERT_FALSE(produce_txn("tx", p->producer_id, p->epoch, 1));
    EXPECT_EQ(state()->last_stable_offset(part()->high_watermark()).value, 0);
    auto ended = run(txn->end_txn("tx", p->producer_id, p->epoch, true, false));
    ASSERT_TRUE(ended) << ended.error().message();
    EXPECT_EQ(part()->log_end_offset().value, 3);  // two records and the commit marker
    EXPECT_EQ(state()->last_stable_offset(part()->high_watermark()).value, 3);
    EXPECT_TRUE(state()->aborted_between(0, 3).empty());
    auto d = txn->describe({"tx"});
    EXPECT_EQ(d[0].state, txn_state::complete_commit);
}

TEST_F(ProducerTest, AbortedTransactionIsInTheAbortedIndex) {
    auto p = run(txn->init_producer_id("tx", 60000, -1, -1));
    ASSERT_TRUE(p);
    run(txn->add_partitions("tx", p->producer_id, p->epoch, {{"t", 0}}, false));
    ASSERT_FALSE(produce_txn("tx", p->producer_id, p->epoch, 0));
    ASSERT_TRUE(run(txn->end_txn("tx", p->producer_id, p->epoch, false, false)));
    auto aborted = state()->aborted_between(0, 2);
    ASSERT_EQ(aborted.size(), 1u);
    EXPECT_EQ(aborted[0], (aborted_txn{p->producer_id, 0, 1}));
}

TEST_F(ProducerTest, ProduceToAPartitionNotInTheTransactionIsRefused) {
    auto p = run(txn->init_producer_id("tx", 60000, -1, -1));
    run(txn->add_partitions("tx", p->producer_id, p->epoch, {{"t", 0}}, false));
    EXPECT_EQ(produce_txn("tx", p->producer_id, p->epoch, 0, 1),
              make_error_code(errc::transaction_abortable));
    // KIP-890: Produce v12 adds it.
    EXPECT_FALSE(produce_txn("tx", p->producer_id, p->epoch, 0, 1, true));
}

TEST_F(ProducerTest, SecondInstanceFencesTheFirstAndAbortsItsTransaction) {
    auto first = run(txn->init_producer_id("tx", 60000, -1, -1));
    run(txn->add_partitions("tx", first->producer_id, first->epoch, {{"t", 0}}, false));
    ASSERT_FALSE(produce_txn("tx", first->producer_id, first->epoch, 0));
    auto second = run(txn->init_producer_id("tx", 60000, -1, -1));
    ASSERT_TRUE(second) << second.error().message();
    EXPECT_EQ(second->epoch, first->epoch + 2);  // one bump fences and aborts, one is returned
    EXPECT_EQ(state()->aborted_between(0, 10).size(), 1u);
    EXPECT_EQ(state()->last_stable_offset(part()->high_watermark()), part()->high_watermark());
    auto zombie = run(txn->end_txn("tx", first->producer_id, first->epoch, true, false));
    EXPECT_EQ(zombie.error(), make_error_code(errc::producer_fenced));
    EXPECT_EQ(produce_txn("tx", first->producer_id, first->epoch, 1),
              make_error_code(errc::producer_fenced));
}

TEST_F(ProducerTest, TimedOutTransactionIsAborted) {
    auto p = run(txn->init_producer_id("tx", 1000, -1, -1));
    run(txn->add_partitions("tx", p->producer_id, p->epoch, {{"t", 0}}, false));
    ASSERT_FALSE(produce_txn("tx", p->producer_id, p->epoch, 0));
    clock.advance(1001);
    run(timers());
    EXPECT_EQ(txn->describe({"tx"})[0].state, txn_state::complete_abort);
    EXPECT_EQ(state()->aborted_between(0, 10).size(), 1u);
}

TEST_F(ProducerTest, TransactionStateSurvivesARestart) {
    auto p = run(txn->init_producer_id("tx", 60000, -1, -1));
    run(txn->add_partitions("tx", p->producer_id, p->epoch, {{"t", 0}, {"t", 1}}, false));
    ASSERT_FALSE(produce_txn("tx", p->producer_id, p->epoch, 0));
    reopen();
    auto d = txn->describe({"tx"});
    EXPECT_EQ(d[0].state, txn_state::ongoing);
    EXPECT_EQ(d[0].partitions.size(), 2u);
    EXPECT_EQ(state()->last_stable_offset(part()->high_watermark()).value, 0);
    ASSERT_TRUE(run(txn->end_txn("tx", p->producer_id, p->epoch, true, false)));
    EXPECT_EQ(state()->last_stable_offset(part()->high_watermark()), part()->high_watermark());
}

TEST_F(ProducerTest, EndTxnV5BumpsTheEpochAndAnswersRetriesTheSame) {
    auto p = run(txn->init_producer_id("tx", 60000, -1, -1));
    ASSERT_FALSE(produce_txn("tx", p->producer_id, p->epoch, 0, 0, true));
    auto ended = run(txn->end_txn("tx", p->producer_id, p->epoch, true, true));
    ASSERT_TRUE(ended);
    EXPECT_EQ(ended->producer_id, p->producer_id);
    EXPECT_EQ(ended->epoch, p->epoch + 1);
    auto retry = run(txn->end_txn("tx", p->producer_id, p->epoch, true, true));
    ASSERT_TRUE(retry);
    EXPECT_EQ(retry->epoch, ended->epoch);
    // The old epoch's data is fenced in the partition; the new epoch starts at sequence 0.
    EXPECT_EQ(produce(producer_batch(p->producer_id, p->epoch, 1)).error(),
              make_error_code(errc::invalid_producer_epoch));
    EXPECT_FALSE(produce_txn("tx", p->producer_id, ended->epoch, 0, 0, true));
    // An empty abort succeeds and bumps again.
    ASSERT_TRUE(run(txn->end_txn("tx", p->producer_id, ended->epoch, true, true)));
    auto empty = run(txn->end_txn("tx", p->producer_id, ended->epoch + 1, false, true));
    ASSERT_TRUE(empty);
    EXPECT_EQ(empty->epoch, ended->epoch + 2);
}

TEST_F(ProducerTest, ListTransactionsFiltersByState) {
    auto a = run(txn->init_producer_id("a", 60000, -1, -1));
    run(txn->init_producer_id("b", 60000, -1, -1));
    run(txn->add_partitions("a", a->producer_id, a->epoch, {{"t", 0}}, false));
    auto ongoing = txn->list({txn_state::ongoing}, {}, -1, {});
    ASSERT_EQ(ongoing.size(), 1u);
    EXPECT_EQ(ongoing[0].transactional_id, "a");
    EXPECT_EQ(txn->list({}, {}, -1, {}).size(), 2u);
}

}  // namespace
}  // namespace sluice::backend::producer::test
