// Zeros written ahead of the active segment's end (log_env::zero_ahead_bytes): small appends
// land inside the file, sealed and closed segments are cut back to their batches, and recovery
// tells zeros from torn batches.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/log/segment.h"
#include "tests/backend/log/log_fixture.h"

namespace sluice::backend::test {
namespace {

namespace kafka = protocol::kafka;

class ZeroAhead : public LogTest {
protected:
    std::uint64_t file_size(const std::string& path) {
        auto f = fs->open(path, io::open_mode::read_only);
        EXPECT_TRUE(f);
        return f ? *(*f)->size() : 0;
    }
    bool zeros_from(const std::string& path, std::uint64_t from) {
        auto f = fs->open(path, io::open_mode::read_only);
        auto size = *(*f)->size();
        std::vector<std::byte> buf(size - from);
        auto n = (*f)->read_at(buf, from);
        if (!n || *n != buf.size()) {
            return false;
        }
        return std::all_of(buf.begin(), buf.end(), [](std::byte b) { return b == std::byte{0}; });
    }
    static constexpr const char* seg0 = "/data/t-0/00000000000000000000.log";

    /// Four batches in two segments (0 and 2), closed; then segment 0's index files removed,
    /// as if the crash came after the roll, before segment 0 was cut and sealed. Returns where
    /// segment 0's second batch starts.
    std::uint64_t two_segments_unsealed() {
        std::uint64_t second = 0;
        auto m = open_log();
        auto p = make_topic(*m, "t", {{"segment.bytes", "700"}});
        for (int i = 0; i < 4; ++i) {
            if (i == 1) {
                second = static_cast<std::uint64_t>(p->size_bytes());
            }
            EXPECT_TRUE(append_durably(*p, make_batch(1, 250, 0), clock.now()));
        }
        EXPECT_EQ(p->segments().size(), 2u);
        m->close();
        EXPECT_TRUE(fs->remove("/data/t-0/00000000000000000000.index"));
        EXPECT_TRUE(fs->remove("/data/t-0/00000000000000000000.timeindex"));
        return second;
    }
    /// Zeros over segment 0 from `from` to `from + n`.
    void zero_segment0(std::uint64_t from, std::uint64_t n) {
        auto f = fs->open(seg0, io::open_mode::read_write);
        std::vector<std::byte> zeros(n);
        EXPECT_TRUE((*f)->write_at(zeros, from));
    }
};

TEST_F(ZeroAhead, SmallAppendsLandInsideTheFileAndCloseCutsTheZeros) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    ASSERT_TRUE(append_durably(*p, make_batch(2, 100, 0), clock.now()));
    const auto logical = static_cast<std::uint64_t>(p->size_bytes());
    const auto first = file_size(seg0);
    EXPECT_GT(first, logical);
    EXPECT_EQ(first % 4096, 0u);
    EXPECT_TRUE(zeros_from(seg0, logical));

    // Later small appends write over the zeros: the file does not grow while they fit.
    while (static_cast<std::uint64_t>(p->size_bytes()) + 300 < first) {
        ASSERT_TRUE(append_durably(*p, make_batch(1, 100, 0), clock.now()));
        EXPECT_EQ(file_size(seg0), first);
    }
    // Past them, the zeros ahead double (up to the limit), so a busy partition grows rarely.
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(append_durably(*p, make_batch(1, 100, 0), clock.now()));
    }
    EXPECT_GT(file_size(seg0), first);
    EXPECT_TRUE(zeros_from(seg0, static_cast<std::uint64_t>(p->size_bytes())));
    const auto end = p->log_end_offset();
    m->close();
    EXPECT_EQ(file_size(seg0), static_cast<std::uint64_t>(p->size_bytes()));

    auto again = open_log();
    auto q = again->partition("t", partition_id(0));
    EXPECT_EQ(q->log_end_offset(), end);
    EXPECT_EQ(q->recovery().truncated_bytes, 0);
    EXPECT_EQ(append(*q, make_batch(1, 10, 0)).base_offset, end);
}

TEST_F(ZeroAhead, LargeAppendsAndOtherFlushPoliciesWriteNoZeros) {
    {
        auto m = open_log();
        auto p = make_topic(*m, "t");
        ASSERT_TRUE(append_durably(*p, make_batch(1, 70 << 10, 0), clock.now()));  // > 64 KiB
        EXPECT_EQ(file_size(seg0), static_cast<std::uint64_t>(p->size_bytes()));
    }
    auto o = options();
    o.flush = log::flush_policy::os;
    o.data_dir = "/other";
    auto m = open_log(o);
    ASSERT_TRUE(m->create_topic("t", 1, {}));
    auto p = m->partition("t", partition_id(0));
    append(*p, make_batch(2, 100, 0));
    EXPECT_EQ(file_size("/other/t-0/00000000000000000000.log"),
              static_cast<std::uint64_t>(p->size_bytes()));
}

TEST_F(ZeroAhead, ARolledSegmentIsCutBeforeItsSealAndTrustedOnReopen) {
    {
        auto m = open_log();
        auto p = make_topic(*m, "t", {{"segment.bytes", "2000"}});
        for (int i = 0; i < 12; ++i) {
            ASSERT_TRUE(append_durably(*p, make_batch(1, 250, 0), clock.now()));
        }
        auto segs = p->segments();
        ASSERT_GE(segs.size(), 2u);
        for (std::size_t i = 0; i + 1 < segs.size(); ++i) {
            const auto path = "/data/t-0/" + log::segment::file_name(segs[i].base_offset, ".log");
            EXPECT_EQ(file_size(path), segs[i].size) << path;
        }
        m->close();
    }
    auto m = open_log();
    auto p = m->partition("t", partition_id(0));
    EXPECT_EQ(p->log_end_offset(), offset(12));
    EXPECT_EQ(p->recovery().indexes_rebuilt, 0);  // the seals held: nothing was rescanned
    // Only the active segment was read again; the sealed ones were trusted as they are.
    EXPECT_EQ(p->recovery().bytes_validated,
              static_cast<std::int64_t>(p->segments().back().size));
    EXPECT_EQ(read_all(*p, offset(0)).size(), 12u);
}

TEST_F(ZeroAhead, ACrashLeavesZerosThatRecoveryCutsWithoutLoss) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(append_durably(*p, make_batch(2, 100, 0), clock.now()));
    }
    ASSERT_GT(file_size(seg0), static_cast<std::uint64_t>(p->size_bytes()));
    auto crashed = fs->crash_copy();
    m.reset();
    fs = crashed;

    auto again = open_log();
    auto q = again->partition("t", partition_id(0));
    EXPECT_EQ(q->log_end_offset(), offset(10));
    EXPECT_EQ(q->recovery().truncated_bytes, 0);
    EXPECT_EQ(q->recovery().segments_dropped, 0);
    EXPECT_EQ(file_size(seg0), static_cast<std::uint64_t>(q->size_bytes()));
    EXPECT_EQ(read_all(*q, offset(0)).size(), 5u);
    EXPECT_EQ(append(*q, make_batch(1, 10, 0)).base_offset, offset(10));
}

TEST_F(ZeroAhead, ZerosBeforeALaterSegmentKeepItWhenTheOffsetsRunOn) {
    two_segments_unsealed();
    zero_segment0(file_size(seg0), 3000);  // zeros after segment 0's last batch
    auto m = open_log();
    auto p = m->partition("t", partition_id(0));
    EXPECT_EQ(p->recovery().segments_dropped, 0);
    EXPECT_EQ(p->recovery().truncated_bytes, 0);
    EXPECT_EQ(p->log_end_offset(), offset(4));
    EXPECT_EQ(read_all(*p, offset(0)).size(), 4u);
}

TEST_F(ZeroAhead, ZerosWhereBatchesAreMissingBeforeALaterSegmentAreATornTail) {
    const std::uint64_t second = two_segments_unsealed();
    zero_segment0(second, file_size(seg0) - second);  // its second batch never reached the disk
    auto m = open_log();
    auto p = m->partition("t", partition_id(0));
    EXPECT_EQ(p->recovery().segments_dropped, 1);
    EXPECT_EQ(p->log_end_offset(), offset(1));
}

TEST_F(ZeroAhead, AFullDiskStopsTheZerosNotTheAppend) {
    auto m = open_log();
    auto p = make_topic(*m, "t");
    // Room for the batch but not for the page of zeros after it.
    fs->set_capacity(fs->used_bytes() + 1000);
    auto r = append_durably(*p, make_batch(2, 100, 0), clock.now());
    ASSERT_TRUE(r);
    EXPECT_EQ(file_size(seg0), static_cast<std::uint64_t>(p->size_bytes()));
    fs->set_capacity(std::nullopt);
    ASSERT_TRUE(append_durably(*p, make_batch(2, 100, 0), clock.now()));
    EXPECT_EQ(file_size(seg0), static_cast<std::uint64_t>(p->size_bytes()));  // stays off
    EXPECT_EQ(read_all(*p, offset(0)).size(), 2u);
}

}  // namespace
}  // namespace sluice::backend::test
