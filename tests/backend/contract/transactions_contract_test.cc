// Contract: transactions (backend/api/transactions.h with records.h). A commit makes the
// transaction's records visible to read_committed readers, an abort does not, and the last
// stable offset holds read_committed readers before an open transaction.
#include <limits>

#include "tests/backend/contract/contract_backends.h"

namespace sluice::backend::contract {
namespace {

template <typename F>
class TransactionsContract : public BackendContract<F> {
protected:
    void SetUp() override {
        BackendContract<F>::SetUp();
        if (this->transactions() == nullptr) {
            GTEST_SKIP() << "the backend provides no transactions interface";
        }
        this->create_topic("t", 1);
    }

    api::transactions& txns() { return *this->transactions(); }

    api::producer_identity init(const std::string& txn) {
        auto r = this->run(txns().init_producer_id(
            transactional_id(txn), 60000,
            api::producer_identity{no_producer_id, no_producer_epoch}));
        EXPECT_TRUE(r) << (r ? "" : r.error().text());
        return r ? *r : api::producer_identity{};
    }

    api::backend_error add_partition(const std::string& txn, api::producer_identity p) {
        std::vector<api::txn_partition> parts{{topic_name("t"), partition_id(0)}};
        auto r = this->run(txns().add_partitions(transactional_id(txn), p, parts, false));
        EXPECT_EQ(r.size(), 1u);
        return r.empty() ? api::backend_error{} : r[0];
    }

    api::produced_partition send(const std::string& txn, api::producer_identity p,
                                 std::int32_t seq, const std::vector<std::string>& values) {
        auto b = make_batch(values, 1'700'000'000'000, {p.id.value, p.epoch.value, seq, true});
        return this->produce("t", 0, b, txn);
    }

    api::backend_error end(const std::string& txn, api::producer_identity p, bool commit) {
        auto r = this->run(txns().end_txn(transactional_id(txn), p, commit, false));
        return r ? api::backend_error{} : r.error();
    }

    std::vector<std::string> read_committed() {
        return committed_values(this->fetch("t", 0, 0, 1048576, api::isolation::read_committed));
    }

    /// A transaction of `txn` that wrote `values` and is still open.
    api::producer_identity open_txn(const std::string& txn,
                                    const std::vector<std::string>& values) {
        auto p = init(txn);
        EXPECT_FALSE(add_partition(txn, p));
        auto r = send(txn, p, 0, values);
        EXPECT_FALSE(r.error) << r.error.text();
        return p;
    }
};
TYPED_TEST_SUITE(TransactionsContract, backend_factories, factory_names);

TYPED_TEST(TransactionsContract, CommitMakesRecordsVisibleToReadCommitted) {
    this->produce_values("t", 0, {"plain"});
    auto p = this->open_txn("tx", {"a", "b"});
    // Open: read_committed readers stop at the last stable offset, before the transaction.
    auto before = this->fetch("t", 0, 0, 1048576, api::isolation::read_committed);
    EXPECT_EQ(before.last_stable_offset.value, 1);
    EXPECT_EQ(before.high_watermark.value, 3);
    EXPECT_EQ(committed_values(before), (std::vector<std::string>{"plain"}));
    EXPECT_EQ(this->latest("t", 0, api::isolation::read_committed), 1);
    EXPECT_EQ(this->latest("t", 0, api::isolation::read_uncommitted), 3);

    ASSERT_FALSE(this->end("tx", p, true));
    auto after = this->fetch("t", 0, 0, 1048576, api::isolation::read_committed);
    EXPECT_TRUE(after.aborted.empty());
    EXPECT_EQ(committed_values(after), (std::vector<std::string>{"plain", "a", "b"}));
    // The commit marker takes an offset: the stable offset passes it.
    EXPECT_EQ(after.high_watermark.value, 4);
    EXPECT_EQ(after.last_stable_offset.value, 4);
    EXPECT_EQ(this->latest("t", 0, api::isolation::read_committed), 4);
}

TYPED_TEST(TransactionsContract, AbortKeepsRecordsFromReadCommitted) {
    auto p = this->open_txn("tx", {"a", "b"});
    ASSERT_FALSE(this->end("tx", p, false));
    auto f = this->fetch("t", 0, 0, 1048576, api::isolation::read_committed);
    EXPECT_EQ(f.last_stable_offset.value, 3);
    ASSERT_EQ(f.aborted.size(), 1u);
    EXPECT_EQ(f.aborted[0].producer, p.id);
    EXPECT_EQ(f.aborted[0].first_offset.value, 0);
    EXPECT_TRUE(committed_values(f).empty());
    // Records after the aborted transaction are read.
    this->produce_values("t", 0, {"after"});
    EXPECT_EQ(this->read_committed(), (std::vector<std::string>{"after"}));
}

TYPED_TEST(TransactionsContract, ReadUncommittedSeesOpenTransactions) {
    this->open_txn("tx", {"a"});
    auto f = this->fetch("t", 0, 0);
    EXPECT_EQ(values_of(decode_fetched(f)), (std::vector<std::string>{"a"}));
}

TYPED_TEST(TransactionsContract, SecondTransactionOfAProducerAfterACommit) {
    auto p = this->open_txn("tx", {"one"});
    ASSERT_FALSE(this->end("tx", p, true));
    ASSERT_FALSE(this->add_partition("tx", p));
    ASSERT_FALSE(this->send("tx", p, 1, {"two"}).error);
    ASSERT_FALSE(this->end("tx", p, false));
    EXPECT_EQ(this->read_committed(), (std::vector<std::string>{"one"}));
}

TYPED_TEST(TransactionsContract, InitProducerIdFencesTheOlderEpochAndAbortsItsTransaction) {
    auto old = this->open_txn("tx", {"a"});
    auto newer = this->init("tx");
    EXPECT_EQ(newer.id, old.id);
    EXPECT_GT(newer.epoch.value, old.epoch.value);
    // The open transaction was aborted: the stable offset moved past it, nothing visible.
    EXPECT_TRUE(this->read_committed().empty());
    EXPECT_GE(this->latest("t", 0, api::isolation::read_committed), 1);
    // The old producer can do nothing more.
    EXPECT_EQ(reason_of(this->add_partition("tx", old)), api::errc::producer_fenced);
    EXPECT_EQ(reason_of(this->end("tx", old, true)), api::errc::producer_fenced);
}

TYPED_TEST(TransactionsContract, TransactionalBatchWithoutTransactionalIdIsRefused) {
    auto p = this->init("tx");
    ASSERT_FALSE(this->add_partition("tx", p));
    auto b = make_batch({"a"}, 1'700'000'000'000, {p.id.value, p.epoch.value, 0, true});
    auto r = this->produce("t", 0, b, std::nullopt);
    EXPECT_EQ(reason_of(r.error), api::errc::transactional_id_required);
    EXPECT_EQ(this->latest("t"), 0);
}

TYPED_TEST(TransactionsContract, EndTxnWithNothingOpenIsInvalidState) {
    auto p = this->init("tx");
    // compat: Kafka's coordinator answers INVALID_TXN_STATE to a commit in state Empty.
    EXPECT_EQ(reason_of(this->end("tx", p, true)), api::errc::invalid_txn_state);
}

TYPED_TEST(TransactionsContract, TooLongTimeoutIsRefused) {
    auto r = this->run(this->txns().init_producer_id(
        transactional_id("tx"), std::numeric_limits<std::int32_t>::max(),
        api::producer_identity{no_producer_id, no_producer_epoch}));
    ASSERT_FALSE(r);
    EXPECT_EQ(api::reason(r.error()), api::errc::invalid_transaction_timeout);
}

TYPED_TEST(TransactionsContract, DescribeShowsTheOpenTransaction) {
    auto p = this->open_txn("tx", {"a"});
    std::vector<transactional_id> ids{transactional_id("tx"), transactional_id("unknown-tx")};
    auto d = this->run(this->txns().describe(ids));
    ASSERT_EQ(d.size(), 2u);
    EXPECT_FALSE(d[0].error);
    EXPECT_EQ(d[0].state, "Ongoing");
    EXPECT_EQ(d[0].producer.id, p.id);
    ASSERT_EQ(d[0].partitions.size(), 1u);
    EXPECT_EQ(d[0].partitions[0], (api::txn_partition{topic_name("t"), partition_id(0)}));
    EXPECT_EQ(reason_of(d[1].error), api::errc::transactional_id_not_found);

    ASSERT_FALSE(this->end("tx", p, true));
    auto done = this->run(this->txns().describe({transactional_id("tx")}));
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].state, "CompleteCommit");
}

TYPED_TEST(TransactionsContract, ListFiltersByState) {
    auto open = this->open_txn("open-tx", {"a"});
    (void)open;
    auto committed = this->open_txn("done-tx", {"b"});
    ASSERT_FALSE(this->end("done-tx", committed, true));
    api::transaction_filter filter;
    filter.states = {"Ongoing"};
    auto r = this->run(this->txns().list(filter));
    ASSERT_TRUE(r);
    ASSERT_EQ(r->transactions.size(), 1u);
    EXPECT_EQ(r->transactions[0].txn_id, transactional_id("open-tx"));

    api::transaction_filter bad;
    bad.id_pattern = "(unclosed";
    auto err = this->run(this->txns().list(bad));
    ASSERT_FALSE(err);
    EXPECT_EQ(api::reason(err.error()), api::errc::invalid_regular_expression);
}

TYPED_TEST(TransactionsContract, CommittedTransactionSurvivesReopening) {
    auto p = this->open_txn("tx", {"a"});
    ASSERT_FALSE(this->end("tx", p, true));
    this->reopen();
    EXPECT_EQ(this->read_committed(), (std::vector<std::string>{"a"}));
    // The producer's epoch is remembered: the next init bumps it.
    auto next = this->init("tx");
    EXPECT_EQ(next.id, p.id);
    EXPECT_GT(next.epoch.value, p.epoch.value);
}

TYPED_TEST(TransactionsContract, OffsetsCommittedInATransactionAppearOnCommit) {
    this->create_topic("in", 1);
    auto p = this->open_txn("tx", {"out"});
    ASSERT_TRUE(this->run(this->txns().add_offsets(transactional_id("tx"), p, group_id("g"))));
    api::txn_offset_commit_request req;
    req.txn_id = transactional_id("tx");
    req.producer = p;
    req.group_id = group_id("g");
    req.offsets.push_back({topic_name("in"), partition_id(0), offset(7), -1, std::nullopt});
    ASSERT_TRUE(this->run(this->txns().txn_offset_commit(std::move(req))));

    auto committed = [&] {
        api::offset_fetch_request f;
        f.group_id = group_id("g");
        f.topics = std::vector<api::topic_partition_list>{{topic_name("in"), {partition_id(0)}}};
        auto r = this->run(this->groups().fetch_offsets({f}));
        return r.at(0).topics.at(0).partitions.at(0).committed.value;
    };
    EXPECT_EQ(committed(), -1);
    ASSERT_FALSE(this->end("tx", p, true));
    EXPECT_EQ(committed(), 7);
}

}  // namespace
}  // namespace sluice::backend::contract
