#include "protocol/kafka/record.h"

#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "protocol/core/errc.h"
#include "protocol/kafka/compression.h"
#include "protocol/kafka/record_batch.h"
#include "protocol/kafka/record_batch_builder.h"
#include "tests/protocol/batch_test_support.h"

namespace sluice::protocol::kafka {
namespace {

using testing::compressible_text;
using testing::text;

using testing::mib;

/// Three records covering the shapes a record can take: headers (one with a null value), a
/// null key, a null value, an empty key, and a timestamp before the first one.
byte_buffer sample_batch(compression codec, snappy_framing framing = snappy_framing::xerial) {
    batch_options o;
    o.codec = codec;
    o.compression_options.snappy = framing;
    o.base_offset = 1000;
    record_batch_builder b(o);
    std::array<header_view, 2> headers = {
        header_view{"trace-id", as_bytes("abc123")},
        header_view{"empty", std::nullopt},
    };
    b.add(as_bytes("key-0"), as_bytes("value-0"), 1'700'000'000'000, headers);
    b.add(std::nullopt, as_bytes("value-1"), 1'700'000'000'500);
    b.add(as_bytes(""), std::nullopt, 1'699'999'999'000);  // earlier than the base timestamp
    auto batch = b.finish();
    EXPECT_TRUE(batch.has_value());
    return std::move(*batch);
}

std::vector<record_view> all_records(record_iterator& it) {
    std::vector<record_view> out;
    record_view rec;
    while (it.next(rec)) {
        out.push_back(rec);
    }
    return out;
}

/// Rewrites the CRC after a test edits a batch, so only the edit is under test.
void fix_crc(byte_buffer& batch) {
    store_u32(batch.data() + batch_crc_offset, compute_batch_crc(batch.view()));
}

struct record_codec_case {
    compression codec;
    snappy_framing framing;
    const char* name;
};

const record_codec_case record_codecs[] = {
    {compression::none, snappy_framing::raw, "none"},
    {compression::gzip, snappy_framing::raw, "gzip"},
    {compression::snappy, snappy_framing::raw, "snappy_raw"},
    {compression::snappy, snappy_framing::xerial, "snappy_xerial"},
    {compression::lz4, snappy_framing::raw, "lz4"},
    {compression::zstd, snappy_framing::raw, "zstd"},
};

class RecordRoundTrip : public ::testing::TestWithParam<record_codec_case> {};

TEST_P(RecordRoundTrip, BuiltBatchValidatesAndIteratesToTheSameRecords) {
    auto batch = sample_batch(GetParam().codec, GetParam().framing);
    ASSERT_TRUE(validate_batch(batch.view()).has_value());

    auto it = record_iterator::open(batch.view(), mib);
    ASSERT_TRUE(it.has_value()) << it.error().message();
    auto recs = all_records(*it);

    ASSERT_FALSE(it->error()) << it->error().message();
    EXPECT_EQ(it->header().codec(), GetParam().codec);
    ASSERT_EQ(recs.size(), 3u);
    EXPECT_EQ(recs[0].offset, 1000);
    EXPECT_EQ(recs[1].offset, 1001);
    EXPECT_EQ(recs[2].offset, 1002);
    EXPECT_EQ(recs[0].timestamp, 1'700'000'000'000);
    EXPECT_EQ(recs[1].timestamp, 1'700'000'000'500);
    EXPECT_EQ(recs[2].timestamp, 1'699'999'999'000);
    EXPECT_EQ(recs[2].timestamp_delta, -1000);
    EXPECT_EQ(text(recs[0].key), "key-0");
    EXPECT_EQ(text(recs[0].value), "value-0");
    EXPECT_EQ(text(recs[1].key), "<null>");
    EXPECT_EQ(text(recs[2].key), "");
    EXPECT_EQ(text(recs[2].value), "<null>");
    ASSERT_EQ(recs[0].headers.size(), 2u);
    auto h = recs[0].headers.begin();
    EXPECT_EQ(h->key, "trace-id");
    EXPECT_EQ(text(h->value), "abc123");
    ++h;
    EXPECT_EQ(h->key, "empty");
    EXPECT_FALSE(h->value.has_value());
    EXPECT_TRUE(++h == recs[0].headers.end());
    EXPECT_TRUE(recs[1].headers.empty());
}

TEST_P(RecordRoundTrip, DecodeBatchReturnsEveryRecordAndOwnsTheBuffer) {
    auto batch = sample_batch(GetParam().codec, GetParam().framing);

    auto decoded = decode_batch(batch.view(), mib);
    ASSERT_TRUE(decoded.has_value()) << decoded.error().message();
    decoded_batch moved = std::move(*decoded);  // views must survive the move

    ASSERT_EQ(moved.records.size(), 3u);
    EXPECT_EQ(text(moved.records[0].value), "value-0");
    EXPECT_EQ(text(moved.records[1].value), "value-1");
    EXPECT_EQ(moved.header.records_count, 3);
}

INSTANTIATE_TEST_SUITE_P(Record, RecordRoundTrip, ::testing::ValuesIn(record_codecs),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(RecordIterator, UncompressedRecordsAreViewsIntoTheBatch) {
    auto batch = sample_batch(compression::none);
    auto it = record_iterator::open(batch.view(), mib);
    ASSERT_TRUE(it.has_value());
    record_view rec;
    ASSERT_TRUE(it->next(rec));

    const std::byte* begin = batch.data();
    const std::byte* end = batch.data() + batch.size();
    EXPECT_GE(rec.value->data(), begin);
    EXPECT_LT(rec.value->data(), end);
    EXPECT_EQ(rec.encoded.data(), batch.data() + batch_header_size);
}

TEST(RecordIterator, MovedIteratorKeepsDecompressedViewsValid) {
    auto batch = sample_batch(compression::zstd);
    auto opened = record_iterator::open(batch.view(), mib);
    ASSERT_TRUE(opened.has_value());
    record_view first;
    ASSERT_TRUE(opened->next(first));

    record_iterator it = std::move(*opened);
    record_view second;
    ASSERT_TRUE(it.next(second));

    EXPECT_EQ(text(first.value), "value-0");
    EXPECT_EQ(text(second.value), "value-1");
}

TEST(RecordIterator, LogAppendTimeGivesEveryRecordTheMaxTimestamp) {
    auto batch = sample_batch(compression::none);
    set_log_append_time(batch.mutable_view(), 42);

    auto it = record_iterator::open(batch.view(), mib);
    ASSERT_TRUE(it.has_value());
    auto recs = all_records(*it);

    ASSERT_EQ(recs.size(), 3u);
    for (const auto& r : recs) {
        EXPECT_EQ(r.timestamp, 42);
    }
}

TEST(RecordIterator, FewerRecordsThanCountedIsTruncated) {
    auto batch = sample_batch(compression::none);
    store_i32(batch.data() + 57, 4);  // records_count

    auto it = record_iterator::open(batch.view(), mib);
    ASSERT_TRUE(it.has_value());
    auto recs = all_records(*it);

    EXPECT_EQ(recs.size(), 3u);
    EXPECT_EQ(it->error(), errc::truncated);
}

TEST(RecordIterator, BytesAfterTheLastCountedRecordAreTrailing) {
    auto batch = sample_batch(compression::none);
    store_i32(batch.data() + 57, 2);

    auto it = record_iterator::open(batch.view(), mib);
    ASSERT_TRUE(it.has_value());
    auto recs = all_records(*it);

    EXPECT_EQ(recs.size(), 2u);
    EXPECT_EQ(it->error(), errc::trailing_bytes);
}

TEST(RecordIterator, RecordsCountBeyondWhatTheBytesHoldFailsAtOpen) {
    auto batch = sample_batch(compression::none);
    store_i32(batch.data() + 57, 1'000'000);

    auto it = record_iterator::open(batch.view(), mib);

    ASSERT_FALSE(it.has_value());
    EXPECT_EQ(it.error(), errc::invalid_length);
}

TEST(RecordIterator, NegativeRecordsCountFailsAtOpen) {
    auto batch = sample_batch(compression::none);
    store_i32(batch.data() + 57, -1);

    auto it = record_iterator::open(batch.view(), mib);

    ASSERT_FALSE(it.has_value());
    EXPECT_EQ(it.error(), errc::invalid_value);
}

TEST(RecordIterator, BatchLengthDisagreeingWithTheBytesFailsAtOpen) {
    auto batch = sample_batch(compression::none);

    auto it = record_iterator::open(batch.view().first(batch.size() - 1), mib);

    ASSERT_FALSE(it.has_value());
    EXPECT_EQ(it.error(), errc::invalid_length);
}

TEST(RecordIterator, WrongMagicFailsAtOpen) {
    auto batch = sample_batch(compression::none);
    batch.data()[16] = std::byte{1};

    auto it = record_iterator::open(batch.view(), mib);

    ASSERT_FALSE(it.has_value());
    EXPECT_EQ(it.error(), errc::invalid_value);
}

TEST(RecordIterator, UnknownCodecFailsAtOpen) {
    auto batch = sample_batch(compression::none);
    store_i16(batch.data() + batch_attributes_offset, 6);

    auto it = record_iterator::open(batch.view(), mib);

    ASSERT_FALSE(it.has_value());
    EXPECT_EQ(it.error(), errc::unsupported_compression);
}

TEST(RecordIterator, CompressedBatchPastTheLimitIsTooLarge) {
    batch_options o;
    o.codec = compression::zstd;
    record_batch_builder b(o);
    std::string big = compressible_text(256 * 1024);
    for (int i = 0; i < 8; ++i) {
        b.add(std::nullopt, as_bytes(big), 0);
    }
    auto batch = b.finish();
    ASSERT_TRUE(batch.has_value());
    ASSERT_LT(batch->size(), 64u * 1024);

    auto it = record_iterator::open(batch->view(), mib);

    ASSERT_FALSE(it.has_value());
    EXPECT_EQ(it.error(), errc::too_large);
}

TEST(RecordIterator, GzipBombInAHandMadeBatchIsTooLarge) {
    // A header that claims one record over a gzip stream of 16 MiB of zeros.
    std::vector<std::byte> zeros(16 * mib);
    byte_buffer batch;
    batch.grow(batch_header_size);
    ASSERT_TRUE(compress(compression::gzip, zeros, batch).has_value());
    batch_header h;
    h.batch_length = static_cast<std::int32_t>(batch.size() - batch_log_overhead);
    h.attributes = static_cast<std::int16_t>(compression::gzip);
    h.records_count = 1;
    write_batch_header(batch.mutable_view(), h);
    fix_crc(batch);
    ASSERT_TRUE(validate_batch(batch.view()).has_value());

    auto it = record_iterator::open(batch.view(), mib);

    ASSERT_FALSE(it.has_value());
    EXPECT_EQ(it.error(), errc::too_large);
}

TEST(DecodeBatch, CorruptedCrcIsRejected) {
    auto batch = sample_batch(compression::none);
    batch.data()[batch.size() - 1] ^= std::byte{0x01};

    auto decoded = decode_batch(batch.view(), mib);

    ASSERT_FALSE(decoded.has_value());
    EXPECT_EQ(decoded.error(), errc::crc_mismatch);
}

TEST(DecodeBatch, TruncatedBatchIsRejected) {
    auto batch = sample_batch(compression::gzip);

    auto decoded = decode_batch(batch.view().first(batch.size() - 10), mib);

    ASSERT_FALSE(decoded.has_value());
    EXPECT_EQ(decoded.error(), errc::invalid_length);
}

TEST(DecodeBatch, TruncatedHeaderIsRejected) {
    auto batch = sample_batch(compression::none);

    auto decoded = decode_batch(batch.view().first(40), mib);

    ASSERT_FALSE(decoded.has_value());
    EXPECT_EQ(decoded.error(), errc::truncated);
}

// --- lying lengths inside one record ------------------------------------------------------

/// A batch of one record whose bytes (after the length varint) are given by the test.
byte_buffer batch_with_record_body(const std::vector<std::uint8_t>& body, int length_delta = 0) {
    byte_buffer batch;
    batch.grow(batch_header_size);
    std::byte len[10];
    std::size_t n =
        put_uvarint(len, zigzag32(static_cast<std::int32_t>(body.size()) + length_delta));
    batch.append(bytes_view(len, n));
    for (auto b : body) {
        batch.append(bytes_view(reinterpret_cast<const std::byte*>(&b), 1));
    }
    batch_header h;
    h.batch_length = static_cast<std::int32_t>(batch.size() - batch_log_overhead);
    h.records_count = 1;
    write_batch_header(batch.mutable_view(), h);
    fix_crc(batch);
    return batch;
}

std::error_code first_record_error(const byte_buffer& batch) {
    auto it = record_iterator::open(batch.view(), mib);
    if (!it) {
        return it.error();
    }
    record_view rec;
    while (it->next(rec)) {
    }
    return it->error();
}

// attributes 0, timestamp delta 0, offset delta 0, then key, value, header count (zigzag).
TEST(RecordDecode, WellFormedHandMadeRecordDecodes) {
    auto batch = batch_with_record_body({0, 0, 0, 2, 'k', 4, 'v', 'v', 0});
    EXPECT_FALSE(first_record_error(batch));
}

TEST(RecordDecode, RecordLengthPastTheEndIsTruncated) {
    auto batch = batch_with_record_body({0, 0, 0, 2, 'k', 4, 'v', 'v', 0}, 5);
    EXPECT_EQ(first_record_error(batch), errc::truncated);
}

TEST(RecordDecode, KeyLengthPastTheRecordIsTruncated) {
    auto batch = batch_with_record_body({0, 0, 0, 40, 'k', 4, 'v', 'v', 0});
    EXPECT_EQ(first_record_error(batch), errc::truncated);
}

TEST(RecordDecode, KeyLengthBelowMinusOneIsInvalid) {
    auto batch = batch_with_record_body({0, 0, 0, 3 /* -2 */, 'k', 4, 'v', 'v', 0});
    EXPECT_EQ(first_record_error(batch), errc::invalid_length);
}

TEST(RecordDecode, HeaderCountPastTheRecordIsInvalid) {
    auto batch = batch_with_record_body({0, 0, 0, 2, 'k', 4, 'v', 'v', 100});
    EXPECT_EQ(first_record_error(batch), errc::invalid_length);
}

TEST(RecordDecode, NegativeHeaderCountIsInvalid) {
    auto batch = batch_with_record_body({0, 0, 0, 2, 'k', 4, 'v', 'v', 1 /* -1 */});
    EXPECT_EQ(first_record_error(batch), errc::invalid_length);
}

TEST(RecordDecode, NullHeaderKeyIsInvalid) {
    auto batch = batch_with_record_body({0, 0, 0, 2, 'k', 4, 'v', 'v', 2, 1 /* -1 */, 0});
    EXPECT_EQ(first_record_error(batch), errc::invalid_length);
}

TEST(RecordDecode, HeaderValueLengthPastTheRecordIsTruncated) {
    auto batch = batch_with_record_body({0, 0, 0, 2, 'k', 4, 'v', 'v', 2, 2, 'h', 30, 'x'});
    EXPECT_EQ(first_record_error(batch), errc::truncated);
}

TEST(RecordDecode, BytesLeftInsideTheRecordAreInvalid) {
    auto batch = batch_with_record_body({0, 0, 0, 2, 'k', 4, 'v', 'v', 0, 0x55});
    EXPECT_EQ(first_record_error(batch), errc::invalid_length);
}

TEST(RecordDecode, OverlongVarintIsInvalid) {
    auto batch = batch_with_record_body({0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                         0xff, 0x01, 0, 2, 'k', 4, 'v', 'v', 0});
    EXPECT_EQ(first_record_error(batch), errc::invalid_varint);
}

// --- summaries ----------------------------------------------------------------------------

TEST(RecordSummary, ReportsCountNullKeysAndMaxTimestamp) {
    auto batch = sample_batch(compression::lz4);

    auto s = summarize_records(batch.view(), mib);

    ASSERT_TRUE(s.has_value()) << s.error().message();
    EXPECT_EQ(s->count, 3);
    EXPECT_TRUE(s->offsets_consecutive);
    EXPECT_TRUE(s->has_null_key);
    EXPECT_EQ(s->null_key_indexes, std::vector<std::int32_t>{1});  // an empty key is a key
    EXPECT_EQ(s->max_timestamp, 1'700'000'000'500);
    EXPECT_GT(s->uncompressed_bytes, 0u);
}

TEST(RecordSummary, LastOffsetDeltaDisagreeingWithTheCountIsNotConsecutive) {
    auto batch = sample_batch(compression::none);
    store_i32(batch.data() + 23, 5);  // last_offset_delta
    fix_crc(batch);

    auto s = summarize_records(batch.view(), mib);

    ASSERT_TRUE(s.has_value());
    EXPECT_FALSE(s->offsets_consecutive);
}

// --- control records ----------------------------------------------------------------------

TEST(RecordControlMarker, CommitMarkerRoundTrips) {
    auto batch = build_control_batch(control_record_type::commit, 77, 3, 12, 1234);
    ASSERT_TRUE(batch.has_value());
    auto decoded = decode_batch(batch->view(), mib);
    ASSERT_TRUE(decoded.has_value());
    ASSERT_EQ(decoded->records.size(), 1u);

    auto marker = decode_end_txn_marker(decoded->records[0]);

    ASSERT_TRUE(marker.has_value());
    EXPECT_EQ(marker->type, control_record_type::commit);
    EXPECT_EQ(marker->coordinator_epoch, 12);
    EXPECT_TRUE(decoded->header.is_control());
    EXPECT_TRUE(decoded->header.is_transactional());
    EXPECT_EQ(decoded->header.producer_id, 77);
    EXPECT_EQ(decoded->header.producer_epoch, 3);
    EXPECT_EQ(decoded->header.base_sequence, -1);
    EXPECT_EQ(decoded->records[0].timestamp, 1234);
}

TEST(RecordControlMarker, AbortMarkerRoundTrips) {
    auto batch = build_control_batch(control_record_type::abort, 5, 0, 0, 1);
    ASSERT_TRUE(batch.has_value());
    auto decoded = decode_batch(batch->view(), mib);
    ASSERT_TRUE(decoded.has_value());

    auto marker = decode_end_txn_marker(decoded->records.at(0));

    ASSERT_TRUE(marker.has_value());
    EXPECT_EQ(marker->type, control_record_type::abort);
}

TEST(RecordControlMarker, ShortKeyIsTruncated) {
    std::array<std::byte, 3> key{};
    record_view rec;
    rec.key = bytes_view(key);

    auto marker = decode_end_txn_marker(rec);

    ASSERT_FALSE(marker.has_value());
    EXPECT_EQ(marker.error(), errc::truncated);
}

TEST(RecordControlMarker, OtherControlTypeIsNotAMarker) {
    std::array<std::byte, 4> key{};
    store_i16(key.data() + 2, 2);  // KRaft's leader change
    std::array<std::byte, 6> value{};
    record_view rec;
    rec.key = bytes_view(key);
    rec.value = bytes_view(value);

    auto marker = decode_end_txn_marker(rec);

    ASSERT_FALSE(marker.has_value());
    EXPECT_EQ(marker.error(), errc::invalid_value);
}

TEST(RecordControlMarker, KeyWithLaterVersionFieldsStillDecodes) {
    std::array<std::byte, 8> key{};
    store_i16(key.data(), 1);
    store_i16(key.data() + 2, 1);

    auto k = decode_control_key(bytes_view(key));

    ASSERT_TRUE(k.has_value());
    EXPECT_EQ(k->version, 1);
    EXPECT_EQ(k->type, 1);
}

}  // namespace
}  // namespace sluice::protocol::kafka
