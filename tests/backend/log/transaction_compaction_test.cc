// Compaction of transactional data: aborted records go, committed ones count as written, and
// transaction markers go only once no record of their transaction is left and
// delete.retention.ms has passed; the producer state stops listing an aborted transaction whose
// marker went, at runtime and after a crash (backend/log/compactor.cc).
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <memory>

#include "backend/producer/producer_state_manager.h"
#include "tests/backend/log/compaction_fixture.h"

namespace sluice::backend::test {
namespace {

namespace kafka = protocol::kafka;
namespace bp = backend::producer;

constexpr std::int64_t retention_ms = 1000;  // delete.retention.ms of the topic

class TransactionalCompaction : public Compaction {
protected:
    std::unique_ptr<log::log_manager> m;
    std::unique_ptr<bp::producer_state_manager> states;
    std::shared_ptr<log::partition_log> p;

    void SetUp() override {
        open();
        p = compacted_topic(*m, {{"delete.retention.ms", std::to_string(retention_ms)}});
    }
    void TearDown() override { close(); }

    void open() {
        m = open_log();
        states = std::make_unique<bp::producer_state_manager>(*m, fs, bp::producer_state_settings{},
                                                              clock.fn());
        states->start(false);
    }
    void close() {
        p.reset();
        if (states) {
            states->stop();
        }
        states.reset();
        m.reset();
    }
    /// Everything written so far is fsynced, then the machine loses power: the partition and
    /// its producer state come back from what is on disk (no shutdown snapshot).
    void crash_and_reopen() {
        ASSERT_TRUE(run_until_done(p->flush_to(p->log_end_offset())));
        auto disk = fs->crash_copy();
        close();
        fs = disk;
        open();
        p = m->partition("c", partition_id(0));
        ASSERT_TRUE(p);
    }

    std::shared_ptr<bp::partition_producer_state> state() {
        auto s = states->state_for(p);
        EXPECT_TRUE(s);
        return s ? *s : nullptr;
    }

    // Appends through the producer state, as the produce path and the marker writer do.
    std::int64_t txn_put(std::int64_t pid, std::int32_t& seq, const std::string& key,
                         const std::string& value) {
        kafka::batch_options o;
        o.producer_id = pid;
        o.producer_epoch = 0;
        o.base_sequence = seq++;
        o.transactional = true;
        kafka::record_batch_builder b(o);
        b.add(protocol::as_bytes(key), protocol::as_bytes(value), clock.now());
        auto batch = b.finish();
        EXPECT_TRUE(batch);
        std::vector<std::byte> bytes(batch->view().begin(), batch->view().end());
        bp::append_guard guard(*state(), true);
        log::append_options ao;
        ao.now_ms = clock.now();
        ao.validator = &guard;
        auto r = p->append(bytes, ao);
        EXPECT_TRUE(r) << (r ? "" : r.error().message());
        return r ? r->base_offset.value : -1;
    }
    std::int64_t end_txn(std::int64_t pid, bool commit) {
        const auto type =
            commit ? kafka::control_record_type::commit : kafka::control_record_type::abort;
        auto batch = kafka::build_control_batch(type, pid, 0, 0, clock.now());
        EXPECT_TRUE(batch);
        std::vector<std::byte> bytes(batch->view().begin(), batch->view().end());
        bp::append_guard guard(*state(), kafka::end_txn_marker{type, 0});
        log::append_options ao;
        ao.now_ms = clock.now();
        ao.allow_control_batches = true;
        ao.validator = &guard;
        auto r = p->append(bytes, ao);
        EXPECT_TRUE(r) << (r ? "" : r.error().message());
        return r ? r->base_offset.value : -1;
    }
    // Fills segments with other keys so that what came before is sealed and cleanable.
    void filler(int n) {
        for (int i = 0; i < n; ++i) {
            put(*p, "filler" + std::to_string(i % 2), std::string(60, 'f'), clock.now());
        }
    }
    // Past delete.retention.ms of everything written so far, with new data after it.
    void age() {
        clock.advance(2 * retention_ms);
        filler(20);
    }
    std::map<std::string, std::vector<std::string>> values_by_key() {
        std::map<std::string, std::vector<std::string>> out;
        for (const auto& r : records(*p)) {
            out[r.key].push_back(r.value.value_or("<null>"));
        }
        return out;
    }
    std::vector<std::int64_t> control_offsets() {
        std::vector<std::int64_t> out;
        for (const auto& b : read_all(*p, p->log_start_offset())) {
            auto h = kafka::read_batch_header(b);
            if (h && h->is_control()) {
                out.push_back(h->base_offset);
            }
        }
        return out;
    }
    // What a read_committed fetch from the log start lists (fetch.cc: forget_removed, then
    // aborted_between).
    std::vector<bp::aborted_txn> fetch_aborted() {
        auto st = state();
        st->forget_removed(*p);
        return st->aborted_between(0, std::numeric_limits<std::int64_t>::max());
    }
};

TEST_F(TransactionalCompaction, AnAbortedRecordNeverSupersedesACommittedOne) {
    put(*p, "k", "committed-plain", clock.now());
    std::int32_t seq = 0;
    txn_put(7, seq, "k", "aborted-1");
    txn_put(7, seq, "k", "aborted-2");
    const auto marker = end_txn(7, false);
    filler(40);
    ASSERT_GT(p->segments().size(), 3u);

    auto r = p->compact(clock.now());

    ASSERT_TRUE(r);
    // The aborted records went, the committed value of k stayed; the marker is too young.
    EXPECT_EQ(values_by_key()["k"], std::vector<std::string>{"committed-plain"});
    EXPECT_EQ(control_offsets(), std::vector<std::int64_t>{marker});
}

TEST_F(TransactionalCompaction, AnAbortMarkerStaysUntilDeleteRetentionHasPassed) {
    std::int32_t seq = 0;
    const auto first = txn_put(7, seq, "k", "aborted");
    const auto abort = end_txn(7, false);
    txn_put(7, seq, "other", "committed");
    const auto commit = end_txn(7, true);
    filler(40);

    ASSERT_TRUE(p->compact(clock.now()));

    EXPECT_EQ(values_by_key()["k"], std::vector<std::string>{});
    EXPECT_EQ(control_offsets(), (std::vector<std::int64_t>{abort, commit}));
    EXPECT_EQ(fetch_aborted(), (std::vector<bp::aborted_txn>{{7, first, abort}}));
}

TEST_F(TransactionalCompaction, AReadCommittedReaderIsNotToldOfATransactionWhoseMarkerIsGone) {
    // A client told of an aborted transaction skips the producer's transactional batches from
    // its first offset until it reads the abort marker: listed without its marker, it would
    // also skip the committed transaction after it.
    std::int32_t seq = 0;
    txn_put(7, seq, "k", "aborted");
    end_txn(7, false);
    txn_put(7, seq, "other", "committed");
    const auto commit = end_txn(7, true);
    filler(40);
    ASSERT_TRUE(p->compact(clock.now()));
    ASSERT_EQ(fetch_aborted().size(), 1u);
    age();

    auto r = p->compact(clock.now());

    ASSERT_TRUE(r);
    EXPECT_EQ(r->markers_removed, 1);
    EXPECT_EQ(control_offsets(), std::vector<std::int64_t>{commit});
    EXPECT_EQ(fetch_aborted(), std::vector<bp::aborted_txn>{});
    EXPECT_EQ(values_by_key()["other"], std::vector<std::string>{"committed"});
    EXPECT_EQ(state()->first_ongoing_offset(), -1);
}

TEST_F(TransactionalCompaction, ACommitMarkerGoesOnceItsRecordsAreSuperseded) {
    std::int32_t seq = 0;
    txn_put(9, seq, "k", "from-the-transaction");
    end_txn(9, true);
    put(*p, "k", "later", clock.now());
    txn_put(9, seq, "other", "x");
    const auto last = end_txn(9, true);
    filler(40);
    age();

    ASSERT_TRUE(p->compact(clock.now()));

    EXPECT_EQ(values_by_key()["k"], std::vector<std::string>{"later"});
    EXPECT_EQ(control_offsets(), std::vector<std::int64_t>{last});
}

TEST_F(TransactionalCompaction, ACommitMarkerWithARecordLeftStays) {
    std::int32_t seq = 0;
    put(*p, "k", "old", clock.now());
    txn_put(9, seq, "k", "from-the-transaction");
    // A record of another key between the data and the marker.
    put(*p, "between", "x", clock.now());
    const auto first = end_txn(9, true);
    txn_put(9, seq, "other", "x");
    const auto second = end_txn(9, true);
    filler(40);
    age();

    ASSERT_TRUE(p->compact(clock.now()));

    EXPECT_EQ(values_by_key()["k"], std::vector<std::string>{"from-the-transaction"});
    EXPECT_EQ(values_by_key()["between"], std::vector<std::string>{"x"});
    EXPECT_EQ(control_offsets(), (std::vector<std::int64_t>{first, second}));
}

TEST_F(TransactionalCompaction, TheLastMarkerOfAProducerStays) {
    // It holds the producer's epochs for a replay of the log from the start.
    std::int32_t seq = 0;
    txn_put(7, seq, "k", "aborted");
    const auto abort = end_txn(7, false);
    filler(40);
    age();

    ASSERT_TRUE(p->compact(clock.now()));

    EXPECT_EQ(values_by_key()["k"], std::vector<std::string>{});
    EXPECT_EQ(control_offsets(), std::vector<std::int64_t>{abort});
}

TEST_F(TransactionalCompaction, AnOpenTransactionIsCopiedAsItIs) {
    put(*p, "k", "committed", clock.now());
    std::int32_t seq = 0;
    txn_put(11, seq, "k", "undecided");
    filler(40);

    ASSERT_TRUE(p->compact(clock.now()));

    // Neither may go: the transaction may still commit (then it wins) or abort (then the
    // committed record is k's value).
    EXPECT_EQ(values_by_key()["k"], (std::vector<std::string>{"committed", "undecided"}));
}

TEST_F(TransactionalCompaction, AnOpenTransactionAfterARemovedMarkerStaysOpenAfterACrash) {
    std::int32_t seq = 0;
    txn_put(11, seq, "k", "aborted");
    end_txn(11, false);
    const auto open_first = txn_put(11, seq, "k2", "undecided");
    filler(40);
    ASSERT_EQ(states->write_snapshots(), 1u);
    age();
    auto r = p->compact(clock.now());
    ASSERT_TRUE(r);
    ASSERT_EQ(r->markers_removed, 1);

    crash_and_reopen();

    EXPECT_EQ(control_offsets(), std::vector<std::int64_t>{});
    EXPECT_EQ(values_by_key()["k2"], std::vector<std::string>{"undecided"});
    EXPECT_EQ(state()->first_ongoing_offset(), open_first);
    EXPECT_EQ(state()->aborted_between(0, std::numeric_limits<std::int64_t>::max()),
              std::vector<bp::aborted_txn>{});
}

TEST_F(TransactionalCompaction, ASnapshotFromBeforeTheCompactionNoLongerListsARemovedMarker) {
    std::int32_t seq = 0;
    txn_put(7, seq, "k", "aborted");
    end_txn(7, false);
    txn_put(7, seq, "other", "committed");
    end_txn(7, true);
    filler(40);
    // The snapshot lists the aborted transaction; the compaction after it removes the marker.
    ASSERT_EQ(states->write_snapshots(), 1u);
    ASSERT_EQ(state()->aborted_between(0, std::numeric_limits<std::int64_t>::max()).size(), 1u);
    age();
    ASSERT_EQ(p->compact(clock.now())->markers_removed, 1);

    crash_and_reopen();

    EXPECT_EQ(state()->aborted_between(0, std::numeric_limits<std::int64_t>::max()),
              std::vector<bp::aborted_txn>{});
    EXPECT_EQ(state()->first_ongoing_offset(), -1);
    EXPECT_EQ(values_by_key()["other"], std::vector<std::string>{"committed"});
}

TEST_F(TransactionalCompaction, ATransactionOpenInTheSnapshotAndCompactedAwayIsNotOpenAfterACrash) {
    // The snapshot saw the transaction open; it then committed, a later record superseded its
    // only record, and compaction removed the record and the marker. Replaying from the
    // snapshot meets neither: the transaction must not pin the last stable offset.
    std::int32_t seq = 0;
    txn_put(9, seq, "k", "from-the-transaction");
    ASSERT_EQ(states->write_snapshots(), 1u);
    end_txn(9, true);
    put(*p, "k", "later", clock.now());
    txn_put(9, seq, "other", "x");
    end_txn(9, true);
    filler(40);
    age();
    ASSERT_EQ(p->compact(clock.now())->markers_removed, 1);

    crash_and_reopen();

    EXPECT_EQ(state()->first_ongoing_offset(), -1);
    EXPECT_EQ(state()->last_stable_offset(p->high_watermark()), p->high_watermark());
    EXPECT_EQ(values_by_key()["k"], std::vector<std::string>{"later"});
}

TEST_F(TransactionalCompaction, TheNextTransactionOfTheProducerIsOpenFromItsOwnFirstBatch) {
    // As above, but the producer's next transaction is still open: the replay must not take
    // it for the rest of the removed one (the last stable offset would stay at the removed
    // first batch), nor end it.
    std::int32_t seq = 0;
    txn_put(9, seq, "k", "from-the-transaction");
    ASSERT_EQ(states->write_snapshots(), 1u);
    end_txn(9, true);
    put(*p, "k", "later", clock.now());
    const auto next_first = txn_put(9, seq, "other", "undecided");
    filler(40);
    age();
    ASSERT_EQ(p->compact(clock.now())->markers_removed, 1);

    crash_and_reopen();

    EXPECT_EQ(state()->first_ongoing_offset(), next_first);
    EXPECT_EQ(state()->last_stable_offset(p->high_watermark()), offset(next_first));
    EXPECT_TRUE(state()->has_ongoing_txn(9));
}

TEST_F(TransactionalCompaction, AnAbortedTransactionOpenInTheSnapshotIsNotListedAfterACrash) {
    std::int32_t seq = 0;
    txn_put(7, seq, "k", "aborted");
    ASSERT_EQ(states->write_snapshots(), 1u);
    end_txn(7, false);
    txn_put(7, seq, "other", "committed");
    end_txn(7, true);
    filler(40);
    age();
    ASSERT_EQ(p->compact(clock.now())->markers_removed, 1);

    crash_and_reopen();

    EXPECT_EQ(state()->first_ongoing_offset(), -1);
    EXPECT_EQ(state()->aborted_between(0, std::numeric_limits<std::int64_t>::max()),
              std::vector<bp::aborted_txn>{});
}

}  // namespace
}  // namespace sluice::backend::test
