#include <gtest/gtest.h>

#include <map>

#include "backend/log/errc.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch_builder.h"
#include "tests/backend/log/compaction_fixture.h"

namespace sluice::backend::test {
namespace {

namespace kafka = protocol::kafka;

TEST_F(Compaction, KeepsTheLatestRecordOfEveryKeyAtItsOffset) {
    auto m = open_log();
    auto p = compacted_topic(*m);
    std::map<std::string, std::pair<std::int64_t, std::string>> latest;
    for (int i = 0; i < 60; ++i) {
        std::string key = "k" + std::to_string(i % 5);
        std::string value = "value-" + std::to_string(i) + std::string(40, 'v');
        put(*p, key, value, clock.now());
        latest[key] = {i, value};
    }
    auto active_base = p->segments().back().base_offset;
    ASSERT_GT(p->segments().size(), 3u);

    auto r = p->compact(clock.now());

    ASSERT_TRUE(r);
    EXPECT_GT(r->records_removed, 0);
    EXPECT_LT(r->bytes_after, r->bytes_before);
    std::map<std::string, int> seen_below_active;
    for (const auto& rec : records(*p)) {
        if (rec.offset < active_base.value) {
            ++seen_below_active[rec.key];
            // A surviving record below the active segment is the latest of its key unless
            // a newer one sits in the active segment.
            if (latest[rec.key].first < active_base.value) {
                EXPECT_EQ(rec.offset, latest[rec.key].first);
                EXPECT_EQ(rec.value, latest[rec.key].second);
            }
        }
    }
    for (const auto& [k, n] : seen_below_active) {
        EXPECT_EQ(n, 1) << k;
    }
    EXPECT_EQ(p->log_end_offset(), offset(60));
    EXPECT_EQ(append(*p, make_batch({{"k0", "after", clock.now()}})).base_offset, offset(60));
}

TEST_F(Compaction, ReadingARemovedOffsetReturnsTheNextSurvivor) {
    auto m = open_log();
    auto p = compacted_topic(*m);
    for (int i = 0; i < 40; ++i) {
        put(*p, "same", "v" + std::to_string(i) + std::string(60, 'x'), clock.now());
    }
    ASSERT_TRUE(p->compact(clock.now()));

    auto r = p->read(offset(0), 1 << 20, {});

    ASSERT_TRUE(r);
    auto bytes = flatten(r->records);
    auto batches = split_batches(bytes);
    ASSERT_FALSE(batches.empty());
    EXPECT_GT(kafka::read_batch_header(batches[0])->base_offset, 0);
}

TEST_F(Compaction, TombstonesStayForDeleteRetentionThenGo) {
    auto m = open_log();
    auto p = compacted_topic(*m, {{"delete.retention.ms", "60000"}});
    const std::int64_t t0 = clock.now();
    put(*p, "gone", "old-value" + std::string(100, 'o'), t0);
    put(*p, "gone", std::nullopt, t0);  // tombstone
    for (int i = 0; i < 30; ++i) {
        put(*p, "other" + std::to_string(i % 3), std::string(80, 'z'), t0);
    }

    ASSERT_TRUE(p->compact(t0 + 59000));
    auto early = records(*p);
    ASSERT_TRUE(p->compact(t0 + 61000));
    auto late = records(*p);

    auto count = [](const std::vector<stored_record>& rs, bool tombstone) {
        return std::count_if(rs.begin(), rs.end(), [&](const stored_record& r) {
            return r.key == "gone" && (tombstone ? !r.value.has_value() : r.value.has_value());
        });
    };
    EXPECT_EQ(count(early, true), 1);
    EXPECT_EQ(count(early, false), 0);
    EXPECT_EQ(count(late, true), 0);
    EXPECT_EQ(count(late, false), 0);
}

TEST_F(Compaction, MinCompactionLagProtectsRecentSegments) {
    auto m = open_log();
    auto p = compacted_topic(*m, {{"min.compaction.lag.ms", "3600000"}});
    for (int i = 0; i < 30; ++i) {
        put(*p, "k", std::string(100, 'a'), clock.now());
    }
    EXPECT_FALSE(p->needs_compaction(clock.now()));
    EXPECT_EQ(p->compact(clock.now())->segments_cleaned, 0);

    clock.advance(3600000);

    EXPECT_TRUE(p->needs_compaction(clock.now()));
    EXPECT_GT(p->compact(clock.now())->segments_cleaned, 0);
    EXPECT_FALSE(p->needs_compaction(clock.now()));
}

TEST_F(Compaction, CompressedBatchesAreFilteredAndRecompressed) {
    auto m = open_log();
    auto p = compacted_topic(*m, {{"segment.bytes", "2000"}});
    for (int round = 0; round < 6; ++round) {
        kafka::batch_options bo;
        bo.codec = kafka::compression::gzip;
        kafka::record_batch_builder builder(bo);
        std::vector<std::string> keys, values;
        for (int i = 0; i < 10; ++i) {
            keys.push_back("key" + std::to_string(i));
            values.push_back("round" + std::to_string(round) + "-" + std::to_string(i) +
                             std::string(30, 'c'));
        }
        for (int i = 0; i < 10; ++i) {
            builder.add(protocol::as_bytes(keys[static_cast<std::size_t>(i)]),
                        protocol::as_bytes(values[static_cast<std::size_t>(i)]), clock.now());
        }
        auto batch = builder.finish();
        ASSERT_TRUE(batch);
        std::vector<std::byte> bytes(batch->view().begin(), batch->view().end());
        append(*p, bytes);
        append(*p, make_batch({{"pad", std::string(600, 'p'), clock.now()}}));
    }
    ASSERT_GT(p->segments().size(), 2u);

    ASSERT_TRUE(p->compact(clock.now()));

    std::map<std::string, std::string> last;
    std::map<std::string, int> copies;
    for (const auto& r : records(*p)) {
        last[r.key] = r.value.value_or("");
        ++copies[r.key];
    }
    for (int i = 0; i < 10; ++i) {
        std::string k = "key" + std::to_string(i);
        EXPECT_EQ(last[k].substr(0, 7), "round5-") << k;
        EXPECT_LE(copies[k], 2) << k;  // the latest, plus maybe one in the active segment
    }
}

TEST_F(Compaction, CompactedLogSurvivesACrashAndReopen) {
    {
        auto m = open_log();
        auto p = compacted_topic(*m);
        for (int i = 0; i < 50; ++i) {
            ASSERT_TRUE(append_durably(
                *p, make_batch({{"k" + std::to_string(i % 4), std::string(50, 'q'), clock.now()}}),
                clock.now()));
        }
        ASSERT_TRUE(p->compact(clock.now()));
        fs = fs->crash_copy();
    }
    auto m = open_log();
    auto p = m->partition("c", partition_id(0));
    ASSERT_TRUE(p);
    EXPECT_EQ(p->log_end_offset(), offset(50));
    EXPECT_EQ(p->recovery().truncated_bytes, 0);
    EXPECT_LT(records(*p).size(), 20u);
    EXPECT_FALSE(*fs->exists("/data/c-0/swap"));
}

TEST_F(Compaction, CrashBeforeTheCommitKeepsTheOriginalSegments) {
    std::vector<stored_record> before;
    {
        auto m = open_log();
        auto p = compacted_topic(*m);
        for (int i = 0; i < 40; ++i) {
            ASSERT_TRUE(append_durably(
                *p, make_batch({{"k" + std::to_string(i % 4), std::string(50, 'q'), clock.now()}}),
                clock.now()));
        }
        before = records(*p);
        // The rename of cleaning/ to swap/ (the commit) fails.
        fs->fail_renames("c-0/swap", 1, io::errno_code(EIO));
        EXPECT_FALSE(p->compact(clock.now()));
        fs = fs->crash_copy();
    }
    auto m = open_log();
    auto p = m->partition("c", partition_id(0));
    EXPECT_EQ(records(*p).size(), before.size());
    EXPECT_FALSE(*fs->exists("/data/c-0/cleaning"));
}

TEST_F(Compaction, CrashDuringTheSwapIsFinishedOnOpen) {
    {
        auto m = open_log();
        auto p = compacted_topic(*m);
        for (int i = 0; i < 40; ++i) {
            ASSERT_TRUE(append_durably(
                *p, make_batch({{"k" + std::to_string(i % 4), std::string(50, 'q'), clock.now()}}),
                clock.now()));
        }
        // Committed, then moving the files into place fails after the first one.
        fs->fail_renames("c-0/swap/", 1, io::errno_code(EIO), 1);
        auto r = p->compact(clock.now());
        EXPECT_FALSE(r);
        EXPECT_TRUE(p->closed());  // nothing is served from a half-swapped folder
        fs = fs->crash_copy();
    }
    auto m = open_log();
    auto p = m->partition("c", partition_id(0));
    ASSERT_TRUE(p);
    EXPECT_FALSE(*fs->exists("/data/c-0/swap"));
    auto rs = records(*p);
    EXPECT_LT(rs.size(), 15u);
    std::int64_t prev = -1;
    for (const auto& r : rs) {
        EXPECT_GT(r.offset, prev);
        prev = r.offset;
    }
    EXPECT_EQ(p->log_end_offset(), offset(40));
}

TEST_F(Compaction, KeylessRecordsAreRefused) {
    auto m = open_log();
    auto p = compacted_topic(*m);
    log::append_options o;
    auto keyless = make_batch({{std::nullopt, "v", 0}});
    auto keyed = make_batch({{"k", "v", 0}});
    EXPECT_EQ(p->append(keyless, o).error(), log::errc::invalid_record);
    EXPECT_TRUE(p->append(keyed, o));
}

TEST_F(Compaction, KeylessRecordsAreNamedByTheirPositionInTheRequest) {
    auto m = open_log();
    auto p = compacted_topic(*m);
    std::vector<api::record_error> errors;
    log::append_options o;
    o.record_errors = &errors;
    // Two batches: positions count across them (records 1 and 3 of 4 have no key).
    auto first = make_batch({{"a", "v", 0}, {std::nullopt, "v", 0}});
    auto second = make_batch({{"b", "v", 0}, {std::nullopt, "v", 0}});
    std::vector<std::byte> both(first.begin(), first.end());
    both.insert(both.end(), second.begin(), second.end());

    auto r = p->append(both, o);

    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), log::errc::invalid_record);
    ASSERT_EQ(errors.size(), 2u);
    EXPECT_EQ(errors[0].batch_index, 1);
    EXPECT_EQ(errors[1].batch_index, 3);
    EXPECT_EQ(errors[0].message,
              "Compacted topic cannot accept message without key in topic partition c-0");
    EXPECT_EQ(p->log_end_offset(), offset(0));
}

TEST_F(Compaction, ManagerRunsOnlyWhereTheDirtyRatioSaysSo) {
    auto m = open_log();
    auto p = compacted_topic(*m, {{"min.cleanable.dirty.ratio", "0.5"}});
    auto plain = make_topic(*m, "plain", {{"segment.bytes", "1200"}});
    for (int i = 0; i < 40; ++i) {
        put(*p, "k" + std::to_string(i % 3), std::string(60, 'd'), clock.now());
        append(*plain, make_batch({{"k", std::string(60, 'd'), clock.now()}}));
    }
    auto first = m->run_compaction(clock.now());
    auto second = m->run_compaction(clock.now());
    EXPECT_GT(first.segments_cleaned, 0);
    EXPECT_EQ(second.segments_cleaned, 0);
    EXPECT_EQ(read_all(*plain, offset(0)).size(), 40u);
}

}  // namespace
}  // namespace sluice::backend::test
