#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include "backend/log/data_waiter.h"
#include "backend/log/errc.h"
#include "protocol/kafka/record_batch.h"
#include "tests/backend/log/log_fixture.h"

namespace sluice::backend::test {
namespace {

namespace kafka = protocol::kafka;
using log::errc;

using PartitionLog = LogTest;

/// Waits (at most 10 s) until the sync round a new partition queues for its directory is done.
bool creation_sync_finished(const log::partition_log& p) {
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (p.needs_sync() && std::chrono::steady_clock::now() < until) {
        std::this_thread::yield();
    }
    return !p.needs_sync();
}

TEST_F(PartitionLog, AppendAssignsContiguousOffsetsAndRewritesBaseOffsets) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    auto a = append(*p, make_batch(3, 10, clock.now()));
    auto b = append(*p, make_batch(2, 10, clock.now()));

    EXPECT_EQ(a.base_offset, offset(0));
    EXPECT_EQ(a.last_offset, offset(2));
    EXPECT_EQ(b.base_offset, offset(3));
    EXPECT_EQ(b.last_offset, offset(4));
    EXPECT_EQ(p->log_end_offset(), offset(5));
    EXPECT_EQ(p->high_watermark(), offset(5));
    auto batches = read_all(*p, offset(0));
    ASSERT_EQ(batches.size(), 2u);
    EXPECT_EQ(kafka::read_batch_header(batches[1])->base_offset, 3);
    EXPECT_TRUE(kafka::validate_batch(batches[1]));  // CRC still valid after the rewrite
}

TEST_F(PartitionLog, AppendOfSeveralBatchesInOneCallKeepsThemInOrder) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    auto one = make_batch(2, 5, clock.now(), 'a');
    auto two = make_batch(3, 5, clock.now(), 'b');
    std::vector<std::byte> both = one;
    both.insert(both.end(), two.begin(), two.end());

    auto r = append(*p, both);

    EXPECT_EQ(r.base_offset, offset(0));
    EXPECT_EQ(r.last_offset, offset(4));
    auto batches = read_all(*p, offset(0));
    ASSERT_EQ(batches.size(), 2u);
    EXPECT_EQ(decode_records(batches[1])[0].value, "bbbbb");
}

TEST_F(PartitionLog, ReadStartsWithTheBatchContainingTheOffset) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    append(*p, make_batch(5, 10, clock.now(), 'a'));
    append(*p, make_batch(5, 10, clock.now(), 'b'));

    auto r = p->read(offset(7), 1 << 20, {});

    ASSERT_TRUE(r);
    auto bytes = flatten(r->records);
    auto batches = split_batches(bytes);
    ASSERT_EQ(batches.size(), 1u);
    EXPECT_EQ(kafka::read_batch_header(batches[0])->base_offset, 5);
    EXPECT_EQ(r->log_end_offset, offset(10));
    EXPECT_EQ(r->log_start_offset, offset(0));
}

TEST_F(PartitionLog, ReadHonoursMaxBytesButReturnsOneWholeBatch) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    for (int i = 0; i < 4; ++i) {
        append(*p, make_batch(1, 1000, clock.now()));
    }
    auto one_batch = kafka::read_batch_header(read_all(*p, offset(0))[0])->total_size();

    auto small = p->read(offset(0), 10, {});
    auto two = p->read(offset(0), 2 * one_batch + 5, {});
    log::read_options strict;
    strict.min_one_batch = false;
    auto none = p->read(offset(0), 10, strict);

    ASSERT_TRUE(small && two && none);
    EXPECT_EQ(small->records.size(), one_batch);
    EXPECT_EQ(two->records.size(), 2 * one_batch);
    EXPECT_EQ(none->records.size(), 0u);
    EXPECT_EQ(small->record_count, 1u);
    EXPECT_EQ(two->record_count, 2u);
    EXPECT_EQ(none->record_count, 0u);
}

TEST_F(PartitionLog, ReadCountsTheRecordsOfTheBatchesItReturns) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    append(*p, make_batch(5, 10, clock.now(), 'a'));
    append(*p, make_batch(3, 10, clock.now(), 'b'));

    auto all = p->read(offset(0), 1 << 20, {});
    auto from_middle = p->read(offset(7), 1 << 20, {});  // the second batch only
    auto at_end = p->read(offset(8), 1 << 20, {});

    ASSERT_TRUE(all && from_middle && at_end);
    EXPECT_EQ(all->record_count, 8u);
    EXPECT_EQ(from_middle->record_count, 3u);
    EXPECT_EQ(at_end->record_count, 0u);
}

TEST_F(PartitionLog, ReadOutsideTheLogIsOutOfRangeAndAtTheEndIsEmpty) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    append(*p, make_batch(2, 10, clock.now()));

    auto past = p->read(offset(3), 100, {});
    auto at_end = p->read(offset(2), 100, {});

    ASSERT_FALSE(past);
    EXPECT_EQ(past.error(), errc::offset_out_of_range);
    ASSERT_TRUE(at_end);
    EXPECT_FALSE(at_end->records.is_null());
    EXPECT_EQ(at_end->records.size(), 0u);
}

TEST_F(PartitionLog, ReadStopsBelowMaxOffset) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    append(*p, make_batch(2, 10, clock.now()));
    append(*p, make_batch(2, 10, clock.now()));
    log::read_options o;
    o.max_offset = offset(2);

    auto r = p->read(offset(0), 1 << 20, o);

    ASSERT_TRUE(r);
    EXPECT_EQ(split_batches(flatten(r->records)).size(), 1u);
}

TEST_F(PartitionLog, AppendRejectsDamagedOrOversizedBatches) {
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"max.message.bytes", "500"}});
    log::append_options o;
    auto bad_crc = make_batch(1, 10, 0);
    bad_crc.back() ^= std::byte{1};
    auto truncated = make_batch(1, 10, 0);
    truncated.pop_back();
    auto big = make_batch(1, 600, 0);
    auto bad_magic = make_batch(1, 10, 0);
    bad_magic[16] = std::byte{1};

    EXPECT_EQ(p->append(bad_crc, o).error(), errc::corrupt_message);
    EXPECT_EQ(p->append(truncated, o).error(), errc::corrupt_message);
    EXPECT_EQ(p->append(big, o).error(), errc::message_too_large);
    EXPECT_EQ(p->append(bad_magic, o).error(), errc::corrupt_message);
    std::vector<std::byte> empty;
    EXPECT_EQ(p->append(empty, o).error(), errc::corrupt_message);
    EXPECT_EQ(p->log_end_offset(), offset(0));
}

TEST_F(PartitionLog, BatchLargerThanASegmentIsRecordListTooLarge) {
    // compat: Kafka answers RECORD_LIST_TOO_LARGE for a batch no segment can hold, and
    // MESSAGE_TOO_LARGE only for one above max.message.bytes (checked first).
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"segment.bytes", "1000"}, {"max.message.bytes", "1500"}});
    log::append_options o;
    auto fits_no_segment = make_batch(1, 1200, 0);
    auto too_large = make_batch(1, 1600, 0);
    auto fits = make_batch(1, 500, 0);
    EXPECT_EQ(p->append(fits_no_segment, o).error(), errc::record_list_too_large);
    EXPECT_EQ(p->append(too_large, o).error(), errc::message_too_large);
    EXPECT_TRUE(p->append(fits, o));
    EXPECT_EQ(p->log_end_offset(), offset(1));
}

TEST_F(PartitionLog, ControlBatchesOnlyFromTheCoordinator) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    auto b = make_batch(1, 4, 0);
    std::int16_t attrs = protocol::load_i16(b.data() + 21) | kafka::batch_attr::control;
    protocol::store_i16(b.data() + 21, attrs);
    protocol::store_u32(b.data() + kafka::batch_crc_offset, kafka::compute_batch_crc(b));
    log::append_options o;

    EXPECT_EQ(p->append(b, o).error(), errc::invalid_record);
    o.allow_control_batches = true;
    EXPECT_TRUE(p->append(b, o));
}

TEST_F(PartitionLog, LogAppendTimeStampsBatchesAndKeepsThemValid) {
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"message.timestamp.type", "LogAppendTime"}});
    clock.set(1'800'000'000'000);

    auto r = append(*p, make_batch(2, 10, 5));

    EXPECT_EQ(r.log_append_time_ms, 1'800'000'000'000);
    auto b = read_all(*p, offset(0)).at(0);
    auto h = kafka::validate_batch(b);
    ASSERT_TRUE(h);
    EXPECT_TRUE(h->uses_log_append_time());
    EXPECT_EQ(h->max_timestamp, 1'800'000'000'000);
    EXPECT_EQ(h->base_timestamp, 1'800'000'000'000);
}

TEST_F(PartitionLog, SegmentRollsBySize) {
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"segment.bytes", "1000"}});
    for (int i = 0; i < 10; ++i) {
        append(*p, make_batch(1, 300, clock.now()));
    }

    auto segs = p->segments();

    EXPECT_GE(segs.size(), 4u);
    for (std::size_t i = 0; i + 1 < segs.size(); ++i) {
        EXPECT_LE(segs[i].size, 1000u);
        EXPECT_TRUE(segs[i].sealed);
        EXPECT_EQ(segs[i].next_offset, segs[i + 1].base_offset);
    }
    EXPECT_EQ(read_all(*p, offset(0)).size(), 10u);
}

TEST_F(PartitionLog, SegmentRollsByAge) {
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"segment.ms", "60000"}});
    append(*p, make_batch(1, 10, clock.now()));
    clock.advance(59999);
    append(*p, make_batch(1, 10, clock.now()));
    ASSERT_EQ(p->segments().size(), 1u);
    clock.advance(1);

    append(*p, make_batch(1, 10, clock.now()));

    auto segs = p->segments();
    ASSERT_EQ(segs.size(), 2u);
    EXPECT_EQ(segs[1].base_offset, offset(2));
}

TEST_F(PartitionLog, RuntimeConfigChangeAppliesToTheNextAppend) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    append(*p, make_batch(1, 500, clock.now()));
    ASSERT_TRUE(m->alter_config("t", {{"segment.bytes", "600"}}));

    append(*p, make_batch(1, 500, clock.now()));

    EXPECT_EQ(p->segments().size(), 2u);
    EXPECT_EQ(p->config()->segment_bytes, 600);
}

TEST_F(PartitionLog, SparseIndexFindsEveryOffsetAcrossSegments) {
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"segment.bytes", "10000"}, {"index.interval.bytes", "500"}});
    for (int i = 0; i < 200; ++i) {
        append(*p, make_batch(1 + i % 3, 100, clock.now()));
    }
    ASSERT_GT(p->segments().size(), 3u);
    for (std::int64_t o = 0; o < p->log_end_offset().value; o += 7) {
        auto r = p->read(offset(o), 1, {});
        ASSERT_TRUE(r);
        auto h = kafka::read_batch_header(flatten(r->records));
        ASSERT_TRUE(h);
        EXPECT_LE(h->base_offset, o);
        EXPECT_GE(h->last_offset(), o);
    }
}

TEST_F(PartitionLog, OffsetForTimestampFindsFirstBatchAtOrAfterTheTime) {
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"segment.bytes", "3000"}, {"index.interval.bytes", "200"}});
    for (int i = 0; i < 50; ++i) {
        append(*p, make_batch(2, 100, 1000 + i * 10));  // batch i: offsets 2i, 2i+1, ts 1000+10i
    }

    EXPECT_EQ(*p->offset_for_timestamp(0), offset(0));
    EXPECT_EQ(*p->offset_for_timestamp(1000), offset(0));
    EXPECT_EQ(*p->offset_for_timestamp(1001), offset(2));
    EXPECT_EQ(*p->offset_for_timestamp(1250), offset(50));
    EXPECT_EQ(*p->offset_for_timestamp(1490), offset(98));
    EXPECT_EQ(*p->offset_for_timestamp(1491), log::no_offset);
    auto max = p->max_timestamp();
    EXPECT_EQ(max.timestamp, 1490);
    EXPECT_EQ(max.off, offset(98));
}

TEST_F(PartitionLog, TimestampLookupsPointAtTheRecordNotItsBatch) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    append(*p, make_batch({{std::nullopt, "a", 100},
                           {std::nullopt, "b", 200},
                           {std::nullopt, "c", 300},
                           {std::nullopt, "d", 900},
                           {std::nullopt, "e", 500}}));

    auto at = p->lookup_timestamp(250);
    auto max = p->max_timestamp();

    ASSERT_TRUE(at);
    EXPECT_EQ(at->off, offset(2));
    EXPECT_EQ(at->timestamp, 300);
    EXPECT_EQ(max.timestamp, 900);
    EXPECT_EQ(max.off, offset(3));
}

TEST_F(PartitionLog, OffsetForTimestampWithOutOfOrderTimestamps) {
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"index.interval.bytes", "0"}});
    for (std::int64_t ts : {500, 100, 900, 300, 950}) {
        append(*p, make_batch(1, 10, ts));
    }

    EXPECT_EQ(*p->offset_for_timestamp(50), offset(0));
    EXPECT_EQ(*p->offset_for_timestamp(600), offset(2));
    EXPECT_EQ(*p->offset_for_timestamp(920), offset(4));
    EXPECT_EQ(p->max_timestamp().off, offset(4));
}

TEST_F(PartitionLog, FlushToCompletesAfterAnFsync) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    // Creating the topic queues one sync for its directory; let it finish first, or it could
    // sync the batch appended below before flush_to() is asked to.
    ASSERT_TRUE(creation_sync_finished(*p));
    auto syncs = fs->sync_count();
    auto r = append(*p, make_batch(1, 10, clock.now()));
    EXPECT_LT(p->flushed_offset(), offset(1));

    auto done = run_until_done(p->flush_to(r.last_offset + 1));

    EXPECT_TRUE(done);
    EXPECT_GE(p->flushed_offset(), offset(1));
    EXPECT_GT(fs->sync_count(), syncs);
}

boost::asio::awaitable<void> flush_and_count(std::shared_ptr<log::partition_log> p, offset end,
                                             int* completed) {
    auto r = co_await p->flush_to(end);
    if (r) {
        ++*completed;
    }
}

TEST_F(PartitionLog, GroupCommitServesManyWaitersWithFewFsyncs) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    append(*p, make_batch(1, 10, clock.now()));
    ASSERT_TRUE(run_until_done(p->flush_to(offset(1))));
    auto syncs = fs->sync_count();
    boost::asio::io_context io;
    int completed = 0;
    for (int i = 0; i < 200; ++i) {
        auto r = append(*p, make_batch(1, 10, clock.now()));
        boost::asio::co_spawn(io, flush_and_count(p, r.last_offset + 1, &completed),
                              boost::asio::detached);
    }

    io.run();

    EXPECT_EQ(completed, 200);
    EXPECT_LE(fs->sync_count() - syncs, 10u);  // one data fsync per round, few rounds
    EXPECT_EQ(p->flushed_offset(), offset(201));
}

boost::asio::awaitable<void> append_and_flush_in_turn(std::shared_ptr<log::partition_log> p,
                                                      int rounds, std::int64_t now_ms,
                                                      int* completed) {
    for (int i = 0; i < rounds; ++i) {
        auto batch = make_batch(1, 10, now_ms);
        log::append_options o;
        o.now_ms = now_ms;
        auto r = p->append(batch, o);
        if (!r) {
            co_return;
        }
        auto f = co_await p->flush_to(r->last_offset + 1);
        if (!f) {
            co_return;
        }
        ++*completed;
    }
}

// Flush requests that arrive while a round runs are served by a later round; none may be lost
// between rounds (a lost one leaves its writer waiting for ever).
TEST_F(PartitionLog, EveryFlushIsServedWhileWritersOnSeveralThreadsKeepTheFlusherBusy) {
    auto o = options();
    o.flush_threads = 2;
    auto m = open_log(std::move(o));
    auto p = make_topic(*m, "t");
    constexpr int writers = 4;
    constexpr int rounds = 300;
    std::vector<int> completed(writers, 0);
    std::vector<std::thread> threads;
    const std::int64_t now_ms = clock.now();

    for (int w = 0; w < writers; ++w) {
        threads.emplace_back([&, w] {
            boost::asio::io_context io;
            boost::asio::co_spawn(io, append_and_flush_in_turn(p, rounds, now_ms, &completed[w]),
                                  boost::asio::detached);
            io.run();
        });
    }
    for (auto& t : threads) {
        t.join();
    }

    for (int w = 0; w < writers; ++w) {
        EXPECT_EQ(completed[w], rounds) << "writer " << w;
    }
    EXPECT_EQ(p->flushed_offset(), offset(writers * rounds));
}

TEST_F(PartitionLog, IntervalPolicyAcknowledgesWithoutWaitingForFsync) {
    auto o = options();
    o.flush = log::flush_policy::interval;
    o.flush_interval = std::chrono::milliseconds(0);
    auto m = open_log(o);
    auto p = make_topic(*m, "t");
    // Creating the topic queues one sync for its directory; let it finish first, or it could
    // sync the batch appended below before flush_to() is asked to.
    ASSERT_TRUE(creation_sync_finished(*p));
    auto r = append(*p, make_batch(1, 10, clock.now()));

    EXPECT_TRUE(run_until_done(p->flush_to(r.last_offset + 1)));
    EXPECT_LT(p->flushed_offset(), offset(1));
    m->flush_all();
    m->close();
    EXPECT_GE(p->flushed_offset(), offset(1));
}

class counting_waiter : public log::data_waiter {
public:
    void notify() noexcept override { ++calls; }
    int calls = 0;
};

TEST_F(PartitionLog, DataWaiterIsNotifiedOnceByTheNextAppend) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    auto w = std::make_shared<counting_waiter>();
    p->add_waiter(w);
    EXPECT_EQ(w->calls, 0);

    append(*p, make_batch(1, 10, clock.now()));
    append(*p, make_batch(1, 10, clock.now()));

    EXPECT_EQ(w->calls, 1);
}

TEST_F(PartitionLog, WaiterRegisteredAfterNewDataIsNotifiedAtOnce) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    auto seen = p->log_end_offset();
    append(*p, make_batch(1, 10, clock.now()));
    auto w = std::make_shared<counting_waiter>();

    p->add_waiter(w, seen);

    EXPECT_EQ(w->calls, 1);
}

TEST_F(PartitionLog, DroppedWaitersAreForgotten) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    std::weak_ptr<counting_waiter> weak;
    for (int i = 0; i < 1000; ++i) {
        auto w = std::make_shared<counting_waiter>();
        weak = w;
        p->add_waiter(w);
    }
    EXPECT_TRUE(weak.expired());                 // the partition does not keep waiters alive
    append(*p, make_batch(1, 10, clock.now()));  // and notifying expired ones is harmless
}

boost::asio::awaitable<void> wait_for_data(std::shared_ptr<log::timer_waiter> w,
                                           std::chrono::steady_clock::time_point deadline,
                                           bool* woke) {
    *woke = co_await w->wait_until(deadline);
}

boost::asio::awaitable<void> append_later(std::shared_ptr<log::partition_log> p) {
    auto b = make_batch(1, 10, 0);
    log::append_options o;
    (void)p->append(b, o);
    co_return;
}

TEST_F(PartitionLog, TimerWaiterWakesOnAppendToAnyRegisteredPartition) {
    auto m = open_log();
    ASSERT_TRUE(m->create_topic("t", 3, {}));
    boost::asio::io_context io;
    auto w = std::make_shared<log::timer_waiter>(io.get_executor());
    for (int i = 0; i < 3; ++i) {
        m->partition("t", partition_id(i))->add_waiter(w);
    }
    bool woke = false;
    const auto never = std::chrono::steady_clock::time_point::max();  // only the append ends it
    boost::asio::co_spawn(io, wait_for_data(w, never, &woke), boost::asio::detached);
    boost::asio::co_spawn(io, append_later(m->partition("t", partition_id(2))),
                          boost::asio::detached);

    // Runs what is ready and returns without blocking: a wait the append failed to end is
    // still pending afterwards, and the test fails at once instead of hanging.
    io.poll();

    EXPECT_TRUE(woke);
    EXPECT_TRUE(io.stopped());  // nothing left waiting
}

TEST_F(PartitionLog, TimerWaiterReturnsFalseAtItsDeadline) {
    boost::asio::io_context io;
    auto w = std::make_shared<log::timer_waiter>(io.get_executor());
    bool woke = true;
    // The earliest time point is past whatever the clock reads: the deadline is due at once.
    const auto past = std::chrono::steady_clock::time_point::min();
    boost::asio::co_spawn(io, wait_for_data(w, past, &woke), boost::asio::detached);
    io.run();
    EXPECT_FALSE(woke);
}

class scripted_validator : public log::append_validator {
public:
    result<std::optional<log::append_result>> check(const kafka::batch_header& h,
                                                    offset next) override {
        checked.push_back(next);
        if (reject) {
            return fail(errc::policy_violation);
        }
        if (duplicate) {
            return std::optional<log::append_result>(*duplicate);
        }
        (void)h;
        return std::optional<log::append_result>();
    }
    void appended(const kafka::batch_header& h) override { appended_at.push_back(h.base_offset); }

    bool reject = false;
    std::optional<log::append_result> duplicate;
    std::vector<offset> checked;
    std::vector<std::int64_t> appended_at;
};

TEST_F(PartitionLog, ValidatorSeesOffsetsAndCanRejectOrReportDuplicates) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    scripted_validator v;
    log::append_options o;
    o.validator = &v;
    auto b1 = make_batch(2, 10, 0);
    ASSERT_TRUE(p->append(b1, o));
    EXPECT_EQ(v.checked.back(), offset(0));
    EXPECT_EQ(v.appended_at.back(), 0);

    v.reject = true;
    auto b2 = make_batch(1, 10, 0);
    EXPECT_EQ(p->append(b2, o).error(), errc::policy_violation);
    v.reject = false;
    v.duplicate = log::append_result{offset(0), offset(1), -1, offset(0), false};
    auto b3 = make_batch(2, 10, 0);
    auto dup = p->append(b3, o);

    ASSERT_TRUE(dup);
    EXPECT_TRUE(dup->duplicate);
    EXPECT_EQ(dup->base_offset, offset(0));
    EXPECT_EQ(dup->last_offset, offset(1));
    EXPECT_EQ(p->log_end_offset(), offset(2));
    EXPECT_EQ(v.appended_at.size(), 1u);
}

TEST_F(PartitionLog, DeleteRecordsMovesLogStartDurably) {
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"segment.bytes", "500"}});
    for (int i = 0; i < 10; ++i) {
        append(*p, make_batch(1, 200, clock.now()));
    }
    auto segs_before = p->segments().size();

    auto r = p->delete_records(offset(5));

    ASSERT_TRUE(r);
    EXPECT_EQ(*r, offset(5));
    EXPECT_EQ(p->log_start_offset(), offset(5));
    EXPECT_EQ(p->read(offset(4), 100, {}).error(), errc::offset_out_of_range);
    EXPECT_LT(p->segments().size(), segs_before);
    EXPECT_EQ(p->delete_records(offset(11)).error(), errc::offset_out_of_range);

    auto crashed = fs->crash_copy();
    m.reset();
    fs = crashed;
    auto again = open_log();
    EXPECT_EQ(again->partition("t", partition_id(0))->log_start_offset(), offset(5));
}

TEST_F(PartitionLog, DeleteRecordsToHighWatermarkWithMinusOne) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    append(*p, make_batch(3, 10, clock.now()));
    auto r = p->delete_records(offset(-1));
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, offset(3));
    EXPECT_EQ(p->read(offset(3), 100, {})->records.size(), 0u);
}

TEST_F(PartitionLog, ReopenAfterCleanCloseKeepsEverything) {
    {
        auto m = open_log();
        auto p = make_topic(*m, "t", {{"segment.bytes", "2000"}});
        for (int i = 0; i < 30; ++i) {
            append(*p, make_batch(2, 100, 1000 + i));
        }
        m->close();
    }
    auto m = open_log();
    auto p = m->partition("t", partition_id(0));
    ASSERT_TRUE(p);

    EXPECT_EQ(p->log_end_offset(), offset(60));
    EXPECT_EQ(read_all(*p, offset(0)).size(), 30u);
    EXPECT_EQ(p->recovery().truncated_bytes, 0);
    EXPECT_EQ(p->recovery().indexes_rebuilt, 0);
    EXPECT_EQ(*p->offset_for_timestamp(1010), offset(20));
    EXPECT_EQ(append(*p, make_batch(1, 10, 0)).base_offset, offset(60));
}

TEST_F(PartitionLog, DiskFullFailsTheAppendAndAppendsResumeWithSpace) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    ASSERT_TRUE(append_durably(*p, make_batch(5, 100, 0), clock.now()));
    fs->set_capacity(fs->used_bytes() + 300);
    log::append_options o;

    // Larger than the zeros written ahead of the first batch, so the file has to grow.
    auto b = make_batch(200, 100, 0);
    auto full = p->append(b, o);

    ASSERT_FALSE(full);
    EXPECT_EQ(full.error(), errc::disk_full);
    EXPECT_EQ(p->log_end_offset(), offset(5));
    fs->set_capacity(std::nullopt);
    auto again = append_durably(*p, make_batch(5, 100, 0), clock.now());
    ASSERT_TRUE(again);
    EXPECT_EQ(again->base_offset, offset(5));
    auto batches = read_all(*p, offset(0));
    ASSERT_EQ(batches.size(), 2u);
    for (const auto& x : batches) {
        EXPECT_TRUE(kafka::validate_batch(x));
    }
}

TEST_F(PartitionLog, FailedFsyncFailsWaitersAndCutsBackToTheDurablePoint) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    ASSERT_TRUE(append_durably(*p, make_batch(2, 10, 0), clock.now()));
    auto r = append(*p, make_batch(3, 10, 0));
    fs->fail_next_syncs(1, io::errno_code(EIO));

    auto flushed = run_until_done(p->flush_to(r.last_offset + 1));

    ASSERT_FALSE(flushed);
    EXPECT_EQ(flushed.error(), errc::storage_error);
    EXPECT_EQ(p->log_end_offset(), offset(2));
    EXPECT_EQ(read_all(*p, offset(0)).size(), 1u);
}

TEST_F(PartitionLog, FailedFsyncRefusesWritesUntilTheLogIsReopened) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    ASSERT_TRUE(append_durably(*p, make_batch(2, 10, 0), clock.now()));
    append(*p, make_batch(3, 10, 0));
    fs->fail_next_syncs(1, io::errno_code(EIO));
    ASSERT_FALSE(run_until_done(p->flush_to(offset(5))));
    log::append_options o;

    auto b = make_batch(1, 10, 0);
    auto refused = p->append(b, o);

    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error(), errc::storage_error);
    EXPECT_EQ(p->log_end_offset(), offset(2));
    EXPECT_EQ(read_all(*p, offset(0)).size(), 1u);  // what was durable stays readable
    m->close();
    m.reset();
    auto again = open_log();
    auto q = again->partition("t", partition_id(0));
    ASSERT_TRUE(q);
    auto next = append_durably(*q, make_batch(1, 10, 0), clock.now());
    ASSERT_TRUE(next);
    EXPECT_EQ(next->base_offset, offset(2));
    EXPECT_EQ(read_all(*q, offset(0)).size(), 2u);
}

TEST_F(PartitionLog, IdlePartitionsHoldNoDescriptorsBeyondTheCacheBound) {
    auto o = options();
    o.max_open_files = 8;
    auto m = open_log(o);
    ASSERT_TRUE(m->create_topic("many", 50, {}));
    for (int i = 0; i < 50; ++i) {
        auto p = m->partition("many", partition_id(i));
        append(*p, make_batch(1, 10, 0));
        EXPECT_TRUE(p->read(offset(0), 100, {}));
    }
    EXPECT_LE(m->open_files(), 8u);
}

TEST_F(PartitionLog, ClosedLogRefusesAppendsAndReads) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    m->close();
    log::append_options o;
    auto b = make_batch(1, 10, 0);
    EXPECT_EQ(p->append(b, o).error(), errc::log_closed);
    EXPECT_EQ(p->read(offset(0), 10, {}).error(), errc::log_closed);
    EXPECT_EQ(run_until_done(p->flush_to(offset(1))).error(), errc::log_closed);
}

TEST_F(PartitionLog, ReplayVisitsEveryBatchInOrder) {
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"segment.bytes", "1000"}});
    for (int i = 0; i < 20; ++i) {
        append(*p, make_batch(1, 200, 0));
    }
    std::vector<std::int64_t> seen;
    auto end = p->replay(offset(3), [&](protocol::bytes_view b) {
        seen.push_back(kafka::read_batch_header(b)->base_offset);
        return true;
    });
    ASSERT_TRUE(end);
    EXPECT_EQ(*end, offset(20));
    ASSERT_EQ(seen.size(), 17u);
    EXPECT_EQ(seen.front(), 3);
    EXPECT_EQ(seen.back(), 19);
}

}  // namespace
}  // namespace sluice::backend::test
