// Recovery on the in-memory file system: crashes drop every byte written after the last sync
// (or keep a random prefix of it, which tears batches), then the log is reopened and checked.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>

#include "backend/log/errc.h"
#include "protocol/kafka/record_batch.h"
#include "tests/backend/log/log_fixture.h"

namespace sluice::backend::test {
namespace {

namespace kafka = protocol::kafka;
using log::errc;

using Recovery = LogTest;

std::string value_of(std::uint64_t seq, std::size_t size) {
    std::string v = "seq" + std::to_string(seq) + ":";
    v.resize(size, static_cast<char>('a' + seq % 26));
    return v;
}

void corrupt_byte(io::file_system& fs, const std::string& path, std::uint64_t pos) {
    auto f = fs.open(path, io::open_mode::read_write);
    ASSERT_TRUE(f);
    std::byte b;
    ASSERT_EQ(*(*f)->read_at({&b, 1}, pos), 1u);
    b ^= std::byte{0x40};
    ASSERT_TRUE((*f)->write_at({&b, 1}, pos));
}

TEST_F(Recovery, CrashesLoseOnlyUnacknowledgedBatches) {
    // SLUICE_TEST_SEED explores other interleavings; the default keeps runs reproducible.
    const char* seed_env = std::getenv("SLUICE_TEST_SEED");
    std::mt19937_64 rng(seed_env != nullptr ? std::strtoull(seed_env, nullptr, 10) : 42);
    // offset -> value of every acknowledged (fsynced) record
    std::map<std::int64_t, std::string> acked;
    std::uint64_t seq = 0;
    std::int64_t total_truncated = 0;
    for (int round = 0; round < 40; ++round) {
        auto m = open_log();
        ASSERT_TRUE(m);
        if (round == 0) {
            ASSERT_TRUE(m->create_topic(
                "t", 1, {{"segment.bytes", "3000"}, {"index.interval.bytes", "256"}}));
        }
        auto p = m->partition("t", partition_id(0));
        ASSERT_TRUE(p);
        total_truncated += p->recovery().truncated_bytes;

        // Everything acknowledged before is there, intact, at its offset; offsets are dense.
        auto batches = read_all(*p, offset(0));
        std::int64_t expect = 0;
        std::map<std::int64_t, std::string> present;
        for (const auto& b : batches) {
            auto h = kafka::validate_batch(b);
            ASSERT_TRUE(h) << "round " << round;
            ASSERT_EQ(h->base_offset, expect) << "round " << round;
            auto recs = decode_records(b);
            for (std::size_t i = 0; i < recs.size(); ++i) {
                present[h->base_offset + static_cast<std::int64_t>(i)] = *recs[i].value;
            }
            expect = h->last_offset() + 1;
        }
        ASSERT_EQ(p->log_end_offset(), offset(expect));
        for (const auto& [o, v] : acked) {
            ASSERT_TRUE(present.count(o))
                << "acknowledged offset " << o << " lost in round " << round;
            ASSERT_EQ(present[o], v);
        }
        // Unacknowledged survivors become the new truth (a retry would duplicate them).
        acked = present;

        int ops = std::uniform_int_distribution<int>(1, 30)(rng);
        for (int i = 0; i < ops; ++i) {
            int n = std::uniform_int_distribution<int>(1, 4)(rng);
            std::vector<test_record> recs;
            for (int k = 0; k < n; ++k) {
                recs.push_back({std::nullopt, value_of(seq++, 100 + seq % 300), clock.now()});
            }
            bool durable = std::uniform_int_distribution<int>(0, 2)(rng) != 0;
            if (durable) {
                auto r = append_durably(*p, make_batch(recs), clock.now());
                ASSERT_TRUE(r);
                for (int k = 0; k < n; ++k) {
                    acked[r->base_offset.value + k] = *recs[static_cast<std::size_t>(k)].value;
                }
            } else {
                append(*p, make_batch(recs));
            }
        }
        // Power loss: a random prefix of the unsynced bytes of each file may survive.
        auto crashed = fs->crash_copy({.keep_random_unsynced_prefix = true, .seed = rng()});
        m.reset();  // the old process's last writes go to the old file system
        fs = crashed;
    }
    EXPECT_GT(total_truncated, 0);  // the scenario did produce torn tails
}

TEST_F(Recovery, TornTailIsCutAndReported) {
    {
        auto m = open_log();
        auto p = make_topic(*m, "t");
        for (int i = 0; i < 3; ++i) {
            ASSERT_TRUE(append_durably(*p, make_batch(2, 50, 0), clock.now()));
        }
        m->close();  // cuts the zeros written ahead: the file ends at the last batch
        // Half a batch written, then the crash.
        auto partial = make_batch(2, 50, 0);
        auto f = fs->open("/data/t-0/00000000000000000000.log", io::open_mode::read_write);
        auto size = *(*f)->size();
        ASSERT_TRUE((*f)->write_at(std::span(partial).first(40), size));
        ASSERT_TRUE((*f)->sync());
    }
    auto m = open_log();
    auto p = m->partition("t", partition_id(0));

    EXPECT_EQ(p->recovery().truncated_bytes, 40);
    EXPECT_EQ(p->log_end_offset(), offset(6));
    EXPECT_EQ(read_all(*p, offset(0)).size(), 3u);
    EXPECT_EQ(append(*p, make_batch(1, 5, 0)).base_offset, offset(6));
}

TEST_F(Recovery, CorruptLastBatchIsCut) {
    std::uint64_t last_pos = 0;
    std::uint64_t last_size = 0;
    {
        auto m = open_log();
        auto p = make_topic(*m, "t");
        for (int i = 0; i < 4; ++i) {
            auto b = make_batch(1, 80, 0);
            last_pos = static_cast<std::uint64_t>(p->size_bytes());
            last_size = b.size();
            ASSERT_TRUE(append_durably(*p, b, clock.now()));
        }
        m->close();
    }
    corrupt_byte(*fs, "/data/t-0/00000000000000000000.log", last_pos + last_size - 5);
    auto m = open_log();
    auto p = m->partition("t", partition_id(0));

    EXPECT_EQ(p->recovery().truncated_bytes, static_cast<std::int64_t>(last_size));
    EXPECT_EQ(p->log_end_offset(), offset(3));
}

TEST_F(Recovery, MissingIndexFilesAreRebuilt) {
    {
        auto m = open_log();
        auto p = make_topic(*m, "t", {{"segment.bytes", "2000"}, {"index.interval.bytes", "100"}});
        for (int i = 0; i < 40; ++i) {
            append(*p, make_batch(1, 150, 1000 + i));
        }
        m->close();
    }
    int removed = 0;
    auto names = fs->list("/data/t-0");
    ASSERT_TRUE(names);
    for (const auto& name : *names) {
        if (name.ends_with(".index") || name.ends_with(".timeindex")) {
            ASSERT_TRUE(fs->remove("/data/t-0/" + name));
            ++removed;
        }
    }
    ASSERT_GT(removed, 4);
    auto m = open_log();
    auto p = m->partition("t", partition_id(0));

    EXPECT_GE(p->recovery().indexes_rebuilt, 3);
    EXPECT_EQ(p->log_end_offset(), offset(40));
    EXPECT_EQ(*p->offset_for_timestamp(1025), offset(25));
    auto r = p->read(offset(33), 1, {});
    ASSERT_TRUE(r);
    EXPECT_EQ(kafka::read_batch_header(flatten(r->records))->base_offset, 33);
    // The rebuilt indexes are written again (sealed) so the next open trusts them.
    m->close();
    m.reset();
    auto again = open_log();
    EXPECT_EQ(again->partition("t", partition_id(0))->recovery().indexes_rebuilt, 0);
}

TEST_F(Recovery, DamagedIndexIsNotTrustedAndGetsRebuilt) {
    {
        auto m = open_log();
        auto p = make_topic(*m, "t", {{"segment.bytes", "2000"}, {"index.interval.bytes", "100"}});
        for (int i = 0; i < 20; ++i) {
            append(*p, make_batch(1, 150, 1000 + i));
        }
        m->close();
    }
    // Point the second entry of the first (sealed) segment's index somewhere wrong.
    const std::string path = "/data/t-0/00000000000000000000.index";
    {
        auto f = fs->open(path, io::open_mode::read_write);
        std::byte junk[8] = {};
        junk[3] = std::byte{1};
        junk[7] = std::byte{3};
        ASSERT_TRUE((*f)->write_at(junk, log::index_header_size + 8));
    }
    auto m = open_log();
    auto p = m->partition("t", partition_id(0));
    for (std::int64_t o = 0; o < 20; ++o) {
        auto r = p->read(offset(o), 1, {});
        ASSERT_TRUE(r) << o;
        EXPECT_EQ(kafka::read_batch_header(flatten(r->records))->base_offset, o);
    }
    EXPECT_EQ(*p->offset_for_timestamp(1004), offset(4));
    m->close();  // the flusher rebuilt the damaged index (at the latest while closing)

    auto cache = std::make_shared<io::file_cache>(fs, 4);
    auto segs_size =
        *(*fs->open("/data/t-0/00000000000000000000.log", io::open_mode::read_only))->size();
    log::sparse_index rebuilt(log::index_kind::offset, offset(0), cache, path);
    auto loaded = rebuilt.load(segs_size);
    ASSERT_TRUE(loaded);
    EXPECT_TRUE(loaded->header.sealed);
    EXPECT_TRUE(rebuilt.floor(5, false));
    EXPECT_FALSE(rebuilt.damaged());
    EXPECT_GT(loaded->entries, 3u);
}

TEST_F(Recovery, CorruptionInsideASealedSegmentIsReportedNotServed) {
    std::vector<std::uint64_t> positions;
    {
        auto m = open_log();
        auto p = make_topic(*m, "t", {{"segment.bytes", "1000"}});
        for (int i = 0; i < 9; ++i) {
            positions.push_back(static_cast<std::uint64_t>(p->size_bytes()));
            append(*p, make_batch(1, 200, 0));
        }
        ASSERT_GE(p->segments().size(), 3u);
        m->close();
    }
    // A payload byte of the second batch of the first segment.
    corrupt_byte(*fs, "/data/t-0/00000000000000000000.log", positions[1] + 100);
    auto m = open_log();
    auto p = m->partition("t", partition_id(0));
    ASSERT_TRUE(p);

    auto before = p->read(offset(0), 1, {});
    auto bad = p->read(offset(1), 1 << 20, {});
    auto later = p->read(offset(8), 1 << 20, {});

    ASSERT_TRUE(before);
    EXPECT_EQ(split_batches(flatten(before->records)).size(), 1u);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error(), errc::segment_corrupt);
    EXPECT_TRUE(later);
    // A read that starts before the damage stops at it.
    auto partial = p->read(offset(0), 1 << 20, {});
    ASSERT_TRUE(partial);
    EXPECT_EQ(split_batches(flatten(partial->records)).size(), 1u);
}

TEST_F(Recovery, CorruptionFoundByAnIndexRebuildKeepsLaterSegments) {
    std::vector<std::uint64_t> positions;
    {
        auto m = open_log();
        auto p = make_topic(*m, "t", {{"segment.bytes", "1000"}});
        for (int i = 0; i < 9; ++i) {
            positions.push_back(static_cast<std::uint64_t>(p->size_bytes()));
            append(*p, make_batch(1, 200, 0));
        }
        m->close();
    }
    corrupt_byte(*fs, "/data/t-0/00000000000000000000.log", positions[1] + 100);
    ASSERT_TRUE(fs->remove("/data/t-0/00000000000000000000.index"));
    auto m = open_log();
    auto p = m->partition("t", partition_id(0));

    EXPECT_EQ(p->recovery().corrupt_segments, 1);
    EXPECT_EQ(p->recovery().truncated_bytes, 0);
    EXPECT_EQ(p->log_end_offset(), offset(9));
    EXPECT_EQ(p->read(offset(2), 1, {}).error(), errc::segment_corrupt);
    EXPECT_TRUE(p->read(offset(8), 1, {}));
}

TEST_F(Recovery, TornSegmentThatWasNeverSealedDropsLaterSegments) {
    {
        auto m = open_log();
        auto p = make_topic(*m, "t", {{"segment.bytes", "700"}});
        for (int i = 0; i < 4; ++i) {
            ASSERT_TRUE(append_durably(*p, make_batch(1, 250, 0), clock.now()));
        }
        ASSERT_EQ(p->segments().size(), 2u);
        m->close();
    }
    // As if the crash came after the roll but before segment 0 was fsynced and sealed: its
    // index files are missing and its last batch is torn; segment 2 holds what followed.
    ASSERT_TRUE(fs->remove("/data/t-0/00000000000000000000.index"));
    ASSERT_TRUE(fs->remove("/data/t-0/00000000000000000000.timeindex"));
    {
        auto f = fs->open("/data/t-0/00000000000000000000.log", io::open_mode::read_write);
        ASSERT_TRUE((*f)->truncate(*(*f)->size() - 10));
    }
    auto m = open_log();
    auto p = m->partition("t", partition_id(0));

    EXPECT_EQ(p->recovery().segments_dropped, 1);
    EXPECT_GT(p->recovery().truncated_bytes, 0);
    EXPECT_EQ(p->log_end_offset(), offset(1));
    EXPECT_FALSE(*fs->exists("/data/t-0/00000000000000000002.log"));
    EXPECT_EQ(append(*p, make_batch(1, 5, 0)).base_offset, offset(1));
}

}  // namespace
}  // namespace sluice::backend::test
