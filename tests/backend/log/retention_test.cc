#include <gtest/gtest.h>

#include "backend/log/errc.h"
#include "tests/backend/log/log_fixture.h"

namespace sluice::backend::test {
namespace {

using Retention = LogTest;
using log::errc;

TEST_F(Retention, DeletesWholeSegmentsOlderThanRetentionMs) {
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"segment.bytes", "1000"}, {"retention.ms", "60000"}});
    const std::int64_t t0 = clock.now();
    for (int i = 0; i < 6; ++i) {
        append(*p, make_batch(1, 400, t0 + i * 10000));  // two batches per segment
    }
    auto before = p->segments();
    ASSERT_EQ(before.size(), 3u);

    auto r = p->apply_retention(t0 + 60000 + 10001);  // segment 0 (max ts t0+10000) is expired

    ASSERT_TRUE(r);
    EXPECT_EQ(r->segments_deleted, 1);
    EXPECT_EQ(p->log_start_offset(), before[1].base_offset);
    EXPECT_EQ(p->read(offset(0), 100, {}).error(), errc::offset_out_of_range);
    EXPECT_TRUE(p->read(before[1].base_offset, 100, {}));
    EXPECT_FALSE(*fs->exists("/data/t-0/00000000000000000000.log"));
}

TEST_F(Retention, SizeLimitKeepsTheNewestSegmentsAndTheActiveOne) {
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"segment.bytes", "1000"}, {"retention.bytes", "1500"}});
    for (int i = 0; i < 10; ++i) {
        append(*p, make_batch(1, 400, clock.now()));
    }
    auto r = p->apply_retention(clock.now());

    ASSERT_TRUE(r);
    EXPECT_GT(r->segments_deleted, 0);
    EXPECT_LE(p->size_bytes(), 1500 + 1000);
    EXPECT_GE(p->segments().size(), 1u);
    EXPECT_EQ(p->log_end_offset(), offset(10));
    EXPECT_EQ(read_all(*p, p->log_start_offset()).size(),
              static_cast<std::size_t>(10 - p->log_start_offset().value));
}

TEST_F(Retention, ExpiredActiveSegmentIsReplacedByAnEmptyOneAtTheLogEnd) {
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"retention.ms", "1000"}});
    append(*p, make_batch(3, 10, clock.now()));

    auto r = p->apply_retention(clock.now() + 5000);

    ASSERT_TRUE(r);
    EXPECT_EQ(r->segments_deleted, 1);
    EXPECT_EQ(p->log_start_offset(), offset(3));
    EXPECT_EQ(p->log_end_offset(), offset(3));
    auto crashed = fs->crash_copy();  // the new segment is durable: offsets never restart at 0
    m.reset();
    fs = crashed;
    auto again = open_log();
    auto q = again->partition("t", partition_id(0));
    EXPECT_EQ(q->log_end_offset(), offset(3));
    EXPECT_EQ(append(*q, make_batch(1, 10, 0)).base_offset, offset(3));
}

TEST_F(Retention, NothingIsDeletedUnderRetentionForeverOrCompactOnly) {
    auto m = open_log();
    auto forever = make_topic(*m, "f", {{"segment.bytes", "500"}, {"retention.ms", "-1"}});
    auto compact = make_topic(
        *m, "c", {{"segment.bytes", "500"}, {"cleanup.policy", "compact"}, {"retention.ms", "1"}});
    for (int i = 0; i < 5; ++i) {
        append(*forever, make_batch(1, 300, 0));
        append(*compact, make_batch({{"k", "v", 0}}));
    }
    EXPECT_EQ(forever->apply_retention(clock.now())->segments_deleted, 0);
    EXPECT_EQ(compact->apply_retention(clock.now())->segments_deleted, 0);
}

TEST_F(Retention, SegmentsBelowTheLogStartAreDeleted) {
    auto m = open_log();
    auto p = make_topic(*m, "t", {{"segment.bytes", "500"}, {"retention.ms", "-1"}});
    for (int i = 0; i < 6; ++i) {
        append(*p, make_batch(1, 300, 0));
    }
    ASSERT_TRUE(p->delete_records(offset(6)));
    auto r = p->apply_retention(clock.now());
    ASSERT_TRUE(r);
    EXPECT_EQ(p->segments().size(), 1u);
    EXPECT_EQ(p->log_end_offset(), offset(6));
}

TEST_F(Retention, ManagerPassCoversEveryPartition) {
    auto m = open_log();
    ASSERT_TRUE(m->create_topic("t", 4, {{"segment.bytes", "500"}, {"retention.ms", "10"}}));
    for (int i = 0; i < 4; ++i) {
        auto p = m->partition("t", partition_id(i));
        append(*p, make_batch(1, 300, 0));
        append(*p, make_batch(1, 300, 0));
    }
    auto r = m->run_retention(clock.now());
    EXPECT_EQ(r.segments_deleted, 8);
}

}  // namespace
}  // namespace sluice::backend::test
