#include "protocol/kafka/record_batch_builder.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

#include "protocol/core/errc.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch.h"
#include "tests/protocol/batch_test_support.h"

namespace sluice::protocol::kafka {
namespace {

using testing::text;

using testing::mib;

TEST(RecordBatchBuilder, HeaderCarriesTheOptions) {
    batch_options o;
    o.base_offset = 500;
    o.partition_leader_epoch = 7;
    o.producer_id = 4242;
    o.producer_epoch = 9;
    o.base_sequence = 100;
    o.transactional = true;
    o.codec = compression::snappy;
    record_batch_builder b(o);
    b.add(as_bytes("k"), as_bytes("v"), 10);
    b.add(as_bytes("k"), as_bytes("v"), 11);

    auto batch = b.finish();
    ASSERT_TRUE(batch.has_value());
    auto h = validate_batch(batch->view());

    ASSERT_TRUE(h.has_value()) << h.error().message();
    EXPECT_EQ(h->base_offset, 500);
    EXPECT_EQ(h->partition_leader_epoch, 7);
    EXPECT_EQ(h->producer_id, 4242);
    EXPECT_EQ(h->producer_epoch, 9);
    EXPECT_EQ(h->base_sequence, 100);
    EXPECT_EQ(h->last_sequence(), 101);
    EXPECT_TRUE(h->is_transactional());
    EXPECT_FALSE(h->is_control());
    EXPECT_EQ(h->codec(), compression::snappy);
    EXPECT_EQ(h->records_count, 2);
    EXPECT_EQ(h->last_offset_delta, 1);
}

TEST(RecordBatchBuilder, FirstTimestampIsTheBaseAndTheLargestIsTheMax) {
    record_batch_builder b;
    b.add(std::nullopt, as_bytes("a"), 2000);
    b.add(std::nullopt, as_bytes("b"), 5000);
    b.add(std::nullopt, as_bytes("c"), 1000);

    auto batch = b.finish();
    ASSERT_TRUE(batch.has_value());
    auto h = read_batch_header(batch->view());

    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(h->base_timestamp, 2000);
    EXPECT_EQ(h->max_timestamp, 5000);
}

TEST(RecordBatchBuilder, LogAppendTimeOptionSetsTheTimestampType) {
    batch_options o;
    o.log_append_time = true;
    record_batch_builder b(o);
    b.add(std::nullopt, as_bytes("a"), 2000);

    auto batch = b.finish();
    ASSERT_TRUE(batch.has_value());

    EXPECT_TRUE(read_batch_header(batch->view())->uses_log_append_time());
}

TEST(RecordBatchBuilder, EmptyBatchIsValid) {
    record_batch_builder b;

    auto batch = b.finish();

    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(batch->size(), batch_header_size);
    auto h = validate_batch(batch->view());
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(h->records_count, 0);
    EXPECT_EQ(h->base_timestamp, -1);
}

TEST(RecordBatchBuilder, IsEmptyAndReusableAfterFinish) {
    record_batch_builder b;
    b.add(std::nullopt, as_bytes("first"), 1);
    ASSERT_TRUE(b.finish().has_value());

    b.add(std::nullopt, as_bytes("second"), 2);
    auto batch = b.finish();

    ASSERT_TRUE(batch.has_value());
    auto decoded = decode_batch(batch->view(), mib);
    ASSERT_TRUE(decoded.has_value());
    ASSERT_EQ(decoded->records.size(), 1u);
    EXPECT_EQ(text(decoded->records[0].value), "second");
    EXPECT_EQ(decoded->records[0].offset_delta, 0);
}

TEST(RecordBatchBuilder, EncodedRecordSizeMatchesWhatIsWritten) {
    std::array<header_view, 1> headers = {header_view{"h", as_bytes("value")}};
    std::string value(300, 'x');
    new_record rec{as_bytes("key"), as_bytes(value), headers, 99};
    record_batch_builder b;

    b.add(rec);

    EXPECT_EQ(b.uncompressed_size(),
              batch_header_size + record_batch_builder::encoded_record_size(rec, 0, 0));
}

TEST(RecordBatchBuilder, UncompressedSizeGrowsWithEachRecord) {
    record_batch_builder b;
    std::size_t empty = b.uncompressed_size();

    b.add(std::nullopt, as_bytes("abc"), 0);

    EXPECT_GT(b.uncompressed_size(), empty);
    EXPECT_EQ(b.record_count(), 1);
}

TEST(RecordBatchBuilder, ExtremeTimestampDeltasRoundTrip) {
    record_batch_builder b;
    b.add(std::nullopt, as_bytes("a"), INT64_MAX);
    b.add(std::nullopt, as_bytes("b"), INT64_MIN);

    auto batch = b.finish();
    ASSERT_TRUE(batch.has_value());
    auto decoded = decode_batch(batch->view(), mib);

    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(decoded->records[0].timestamp, INT64_MAX);
    EXPECT_EQ(decoded->records[1].timestamp, INT64_MIN);
}

TEST(RecordBatchBuilder, ManyRecordsKeepConsecutiveOffsetDeltas) {
    batch_options o;
    o.codec = compression::lz4;
    record_batch_builder b(o);
    for (int i = 0; i < 1000; ++i) {
        std::string v = "value-" + std::to_string(i);
        b.add(std::nullopt, as_bytes(v), i);
    }

    auto batch = b.finish();
    ASSERT_TRUE(batch.has_value());
    auto s = summarize_records(batch->view(), mib);

    ASSERT_TRUE(s.has_value());
    EXPECT_EQ(s->count, 1000);
    EXPECT_TRUE(s->offsets_consecutive);
}

}  // namespace
}  // namespace sluice::protocol::kafka
