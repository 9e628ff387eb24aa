// Contract: idempotent producers (records.h produce with a producer id, transactions.h
// init_producer_id). Sequences in order are accepted, a retried batch is answered as before
// without a second write, a gap is out_of_order_sequence, an old epoch is fenced.
#include "tests/backend/contract/contract_backends.h"

namespace sluice::backend::contract {
namespace {

template <typename F>
class IdempotenceContract : public BackendContract<F> {
protected:
    void SetUp() override {
        BackendContract<F>::SetUp();
        if (this->transactions() == nullptr) {
            GTEST_SKIP() << "the backend hands out no producer ids (no transactions interface)";
        }
        this->create_topic("t", 1);
    }

    api::producer_identity init(std::optional<std::string> txn = std::nullopt) {
        std::optional<transactional_id> id;
        if (txn) {
            id = transactional_id(*txn);
        }
        auto r = this->run(this->transactions()->init_producer_id(
            id, 60000, api::producer_identity{no_producer_id, no_producer_epoch}));
        EXPECT_TRUE(r) << (r ? "" : r.error().text());
        return r ? *r : api::producer_identity{};
    }

    api::produced_partition send(api::producer_identity p, std::int32_t seq,
                                 const std::vector<std::string>& values) {
        auto b = make_batch(values, 1'700'000'000'000, {p.id.value, p.epoch.value, seq, false});
        return this->produce("t", 0, b);
    }
};
TYPED_TEST_SUITE(IdempotenceContract, backend_factories, factory_names);

TYPED_TEST(IdempotenceContract, InitProducerIdHandsOutDistinctIdsWithEpochZero) {
    auto a = this->init();
    auto b = this->init();
    EXPECT_GE(a.id.value, 0);
    EXPECT_GE(b.id.value, 0);
    EXPECT_NE(a.id, b.id);
    EXPECT_EQ(a.epoch.value, 0);
    EXPECT_EQ(b.epoch.value, 0);
}

TYPED_TEST(IdempotenceContract, SequencesInOrderAreAccepted) {
    auto p = this->init();
    auto r0 = this->send(p, 0, {"a", "b", "c"});
    ASSERT_FALSE(r0.error) << r0.error.text();
    EXPECT_EQ(r0.base_offset.value, 0);
    auto r1 = this->send(p, 3, {"d", "e"});
    ASSERT_FALSE(r1.error) << r1.error.text();
    EXPECT_EQ(r1.base_offset.value, 3);
    EXPECT_EQ(values_of(decode_fetched(this->fetch("t", 0, 0))),
              (std::vector<std::string>{"a", "b", "c", "d", "e"}));
}

TYPED_TEST(IdempotenceContract, DuplicateBatchIsAnsweredWithoutASecondWrite) {
    auto p = this->init();
    ASSERT_FALSE(this->send(p, 0, {"a", "b"}).error);
    ASSERT_FALSE(this->send(p, 2, {"c"}).error);
    // The producer retries its first batch (its answer was lost).
    auto retry = this->send(p, 0, {"a", "b"});
    // compat: Kafka answers a duplicate of one of the last five batches with the original
    // offset and no error.
    EXPECT_FALSE(retry.error) << retry.error.text();
    EXPECT_EQ(retry.base_offset.value, 0);
    EXPECT_EQ(this->latest("t"), 3);
    EXPECT_EQ(values_of(decode_fetched(this->fetch("t", 0, 0))),
              (std::vector<std::string>{"a", "b", "c"}));
}

TYPED_TEST(IdempotenceContract, SequenceGapIsOutOfOrder) {
    auto p = this->init();
    ASSERT_FALSE(this->send(p, 0, {"a"}).error);
    auto gap = this->send(p, 5, {"f"});
    EXPECT_EQ(reason_of(gap.error), api::errc::out_of_order_sequence);
    EXPECT_EQ(this->latest("t"), 1);
    // The expected sequence is still accepted.
    EXPECT_FALSE(this->send(p, 1, {"b"}).error);
}

TYPED_TEST(IdempotenceContract, ProducersKeepTheirOwnSequences) {
    auto a = this->init();
    auto b = this->init();
    ASSERT_FALSE(this->send(a, 0, {"a0"}).error);
    ASSERT_FALSE(this->send(b, 0, {"b0"}).error);
    ASSERT_FALSE(this->send(a, 1, {"a1"}).error);
    EXPECT_EQ(this->latest("t"), 3);
}

TYPED_TEST(IdempotenceContract, OlderEpochIsFencedOnThePartition) {
    auto p = this->init("fenced-txn");
    auto newer = this->init("fenced-txn");
    EXPECT_EQ(newer.id, p.id);
    EXPECT_GT(newer.epoch.value, p.epoch.value);
    // Write with the newer epoch (not transactional: the partition's producer state only).
    auto fresh = this->send(newer, 0, {"new"});
    ASSERT_FALSE(fresh.error) << fresh.error.text();
    auto old = this->send(p, 1, {"old"});
    EXPECT_EQ(reason_of(old.error), api::errc::invalid_producer_epoch);
    EXPECT_EQ(this->latest("t"), 1);
}

TYPED_TEST(IdempotenceContract, SequencesSurviveReopening) {
    auto p = this->init();
    ASSERT_FALSE(this->send(p, 0, {"a", "b"}).error);
    this->reopen();
    // The retry is still recognised, and the next sequence is still expected.
    auto retry = this->send(p, 0, {"a", "b"});
    EXPECT_FALSE(retry.error) << retry.error.text();
    EXPECT_EQ(retry.base_offset.value, 0);
    EXPECT_EQ(reason_of(this->send(p, 3, {"x"}).error), api::errc::out_of_order_sequence);
    auto next = this->send(p, 2, {"c"});
    EXPECT_FALSE(next.error) << next.error.text();
    EXPECT_EQ(next.base_offset.value, 2);
}

}  // namespace
}  // namespace sluice::backend::contract
