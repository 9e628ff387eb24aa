#include "protocol/kafka/legacy_message.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

#include "protocol/core/errc.h"
#include "protocol/kafka/compression.h"
#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch.h"
#include "protocol/kafka/record_batch_builder.h"
#include "tests/protocol/batch_test_support.h"

namespace sluice::protocol::kafka {
namespace {

using testing::text;

using testing::mib;

legacy_message message(std::int8_t magic, std::int64_t offset, std::optional<bytes_view> key,
                       std::optional<bytes_view> value, std::int64_t timestamp = -1,
                       std::int8_t attributes = 0) {
    legacy_message m;
    m.magic = magic;
    m.offset = offset;
    m.key = key;
    m.value = value;
    m.timestamp = timestamp;
    m.attributes = attributes;
    return m;
}

/// Three uncompressed messages at offsets first, first+1, first+2.
byte_buffer plain_set(std::int8_t magic, std::int64_t first) {
    byte_buffer out;
    append_legacy_message(out, message(magic, first, as_bytes("k0"), as_bytes("v0"), 100));
    append_legacy_message(out, message(magic, first + 1, std::nullopt, as_bytes("v1"), 200));
    append_legacy_message(out, message(magic, first + 2, as_bytes("k2"), std::nullopt, 300));
    return out;
}

/// A wrapper around plain_set(magic, inner_first), compressed with `codec`.
byte_buffer wrapped_set(std::int8_t magic, compression codec, std::int64_t wrapper_offset,
                        std::int64_t inner_first, std::int8_t extra_attributes = 0,
                        std::int64_t wrapper_timestamp = 300) {
    auto inner = plain_set(magic, inner_first);
    byte_buffer packed;
    EXPECT_TRUE(compress(codec, inner.view(), packed).has_value());
    byte_buffer out;
    append_legacy_message(
        out, message(magic, wrapper_offset, std::nullopt, packed.view(), wrapper_timestamp,
                     static_cast<std::int8_t>(static_cast<int>(codec) | extra_attributes)));
    return out;
}

// --- decoding -----------------------------------------------------------------------------

TEST(LegacyMessageSet, DecodesMagic0Messages) {
    auto set = plain_set(0, 10);

    auto d = decode_legacy_messages(set.view());

    ASSERT_TRUE(d.has_value()) << d.error().message();
    ASSERT_EQ(d->messages.size(), 3u);
    EXPECT_EQ(d->max_magic, 0);
    EXPECT_EQ(d->codec, compression::none);
    EXPECT_EQ(d->messages[0].offset, 10);
    EXPECT_EQ(text(d->messages[0].key), "k0");
    EXPECT_EQ(text(d->messages[0].value), "v0");
    EXPECT_EQ(d->messages[0].timestamp, -1);
    EXPECT_EQ(text(d->messages[1].key), "<null>");
    EXPECT_EQ(text(d->messages[2].value), "<null>");
}

TEST(LegacyMessageSet, DecodesMagic1Timestamps) {
    auto set = plain_set(1, 0);

    auto d = decode_legacy_messages(set.view());

    ASSERT_TRUE(d.has_value());
    ASSERT_EQ(d->messages.size(), 3u);
    EXPECT_EQ(d->max_magic, 1);
    EXPECT_EQ(d->messages[0].timestamp, 100);
    EXPECT_EQ(d->messages[2].timestamp, 300);
    EXPECT_FALSE(d->messages[0].log_append_time());
}

TEST(LegacyMessageSet, MessageLayoutMatchesTheFormat) {
    byte_buffer out;
    append_legacy_message(out, message(1, 5, as_bytes("k"), as_bytes("val"), 77));

    // offset 8 + size 4 + crc 4 + magic 1 + attributes 1 + timestamp 8 + key 4+1 + value 4+3
    ASSERT_EQ(out.size(), 38u);
    EXPECT_EQ(load_i64(out.data()), 5);
    EXPECT_EQ(load_i32(out.data() + 8), 26);
    EXPECT_EQ(out.data()[16], std::byte{1});
    EXPECT_EQ(load_i64(out.data() + 18), 77);
    EXPECT_EQ(load_i32(out.data() + 26), 1);
    EXPECT_EQ(load_i32(out.data() + 31), 3);
}

TEST(LegacyMessageSet, CrcMismatchIsRejected) {
    auto set = plain_set(1, 0);
    set.data()[set.size() - 1] ^= std::byte{0x20};

    auto d = decode_legacy_messages(set.view());

    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error(), errc::crc_mismatch);
}

TEST(LegacyMessageSet, UnknownMagicIsInvalid) {
    auto set = plain_set(1, 0);
    set.data()[16] = std::byte{3};

    auto d = decode_legacy_messages(set.view());

    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error(), errc::invalid_value);
}

TEST(LegacyMessageSet, TruncatedTailFailsByDefault) {
    auto set = plain_set(0, 0);

    auto d = decode_legacy_messages(set.view().first(set.size() - 3));

    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error(), errc::truncated);
}

TEST(LegacyMessageSet, TruncatedTailIsDroppedWhenAllowed) {
    auto set = plain_set(0, 0);
    legacy_decode_options o;
    o.allow_truncated_tail = true;

    auto d = decode_legacy_messages(set.view().first(set.size() - 3), o);

    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->messages.size(), 2u);
    EXPECT_TRUE(d->truncated_tail);
}

/// Recomputes a message's CRC-32 after a test edits it, so only the edit is under test.
void fix_legacy_crc(byte_buffer& set) {
    auto covered = set.view().subspan(16);
    store_u32(set.data() + 12,
              static_cast<std::uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(covered.data()),
                                               static_cast<uInt>(covered.size()))));
}

TEST(LegacyMessageSet, KeyLengthPastTheMessageIsTruncated) {
    byte_buffer set;
    append_legacy_message(set, message(0, 0, as_bytes("key"), as_bytes("value")));
    store_i32(set.data() + 18, 50);  // the key length, after crc, magic and attributes
    fix_legacy_crc(set);

    auto d = decode_legacy_messages(set.view());

    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error(), errc::truncated);
}

TEST(LegacyMessageSet, FieldsShorterThanTheMessageSizeAreInvalid) {
    byte_buffer set;
    append_legacy_message(set, message(0, 0, as_bytes("key"), as_bytes("value")));
    store_i32(set.data() + 18, 1);  // the key shrinks: two bytes are left over at the end
    store_i32(set.data() + 23, 5);
    fix_legacy_crc(set);

    auto d = decode_legacy_messages(set.view());

    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error(), errc::invalid_length);
}

TEST(LegacyMessageSet, MessageSizeBelowTheMinimumIsInvalid) {
    auto set = plain_set(0, 0);
    store_i32(set.data() + 8, 5);

    auto d = decode_legacy_messages(set.view());

    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error(), errc::invalid_length);
}

TEST(LegacyMessageSet, Magic1GzipWrapperResolvesRelativeOffsets) {
    // The producer writes inner offsets 0..2; the broker stamps the wrapper with the absolute
    // offset of the last inner message.
    auto set = wrapped_set(1, compression::gzip, 52, 0);

    auto d = decode_legacy_messages(set.view());

    ASSERT_TRUE(d.has_value()) << d.error().message();
    ASSERT_EQ(d->messages.size(), 3u);
    EXPECT_EQ(d->codec, compression::gzip);
    EXPECT_EQ(d->messages[0].offset, 50);
    EXPECT_EQ(d->messages[1].offset, 51);
    EXPECT_EQ(d->messages[2].offset, 52);
    EXPECT_EQ(d->messages[1].timestamp, 200);
    EXPECT_EQ(text(d->messages[0].value), "v0");
}

TEST(LegacyMessageSet, Magic0SnappyWrapperKeepsAbsoluteInnerOffsets) {
    auto set = wrapped_set(0, compression::snappy, 12, 10);

    auto d = decode_legacy_messages(set.view());

    ASSERT_TRUE(d.has_value()) << d.error().message();
    ASSERT_EQ(d->messages.size(), 3u);
    EXPECT_EQ(d->messages[0].offset, 10);
    EXPECT_EQ(d->messages[2].offset, 12);
}

TEST(LegacyMessageSet, Magic1Lz4WrapperDecodes) {
    auto set = wrapped_set(1, compression::lz4, 2, 0);

    auto d = decode_legacy_messages(set.view());

    ASSERT_TRUE(d.has_value()) << d.error().message();
    EXPECT_EQ(d->messages.size(), 3u);
}

TEST(LegacyMessageSet, Magic0Lz4WrapperWithKafka08HeaderChecksumDecodes) {
    // compat: Kafka 0.8/0.9 wrote a wrong lz4 header checksum (KIP-57); magic 0 readers skip it.
    auto inner = plain_set(0, 0);
    byte_buffer packed;
    ASSERT_TRUE(compress(compression::lz4, inner.view(), packed).has_value());
    packed.data()[6] ^= std::byte{0x77};
    byte_buffer set;
    append_legacy_message(set, message(0, 2, std::nullopt, packed.view(), -1,
                                       static_cast<std::int8_t>(compression::lz4)));

    auto d = decode_legacy_messages(set.view());

    ASSERT_TRUE(d.has_value()) << d.error().message();
    EXPECT_EQ(d->messages.size(), 3u);
}

TEST(LegacyMessageSet, LogAppendTimeWrapperStampsItsInnerMessages) {
    auto set = wrapped_set(1, compression::gzip, 2, 0, legacy_attr_timestamp_type, 9999);

    auto d = decode_legacy_messages(set.view());

    ASSERT_TRUE(d.has_value());
    for (const auto& m : d->messages) {
        EXPECT_EQ(m.timestamp, 9999);
        EXPECT_TRUE(m.log_append_time());
    }
}

TEST(LegacyMessageSet, WrapperInsideAWrapperIsInvalid) {
    auto inner = wrapped_set(1, compression::gzip, 2, 0);
    byte_buffer packed;
    ASSERT_TRUE(compress(compression::gzip, inner.view(), packed).has_value());
    byte_buffer set;
    append_legacy_message(set, message(1, 2, std::nullopt, packed.view(), 0,
                                       static_cast<std::int8_t>(compression::gzip)));

    auto d = decode_legacy_messages(set.view());

    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error(), errc::invalid_value);
}

TEST(LegacyMessageSet, InnerMessagesOfAnotherMagicAreInvalid) {
    auto inner = plain_set(0, 0);
    byte_buffer packed;
    ASSERT_TRUE(compress(compression::gzip, inner.view(), packed).has_value());
    byte_buffer set;
    append_legacy_message(set, message(1, 2, std::nullopt, packed.view(), 0,
                                       static_cast<std::int8_t>(compression::gzip)));

    auto d = decode_legacy_messages(set.view());

    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error(), errc::invalid_value);
}

TEST(LegacyMessageSet, ZstdWrapperIsUnsupportedBelowMagic2) {
    auto set = wrapped_set(1, compression::zstd, 2, 0);

    auto d = decode_legacy_messages(set.view());

    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error(), errc::unsupported_compression);
}

TEST(LegacyMessageSet, WrapperWithNullValueIsInvalid) {
    byte_buffer set;
    append_legacy_message(set, message(1, 0, std::nullopt, std::nullopt, 0,
                                       static_cast<std::int8_t>(compression::gzip)));

    auto d = decode_legacy_messages(set.view());

    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error(), errc::invalid_value);
}

TEST(LegacyMessageSet, WrapperBombIsTooLarge) {
    std::vector<std::byte> zeros(8 * mib);
    byte_buffer packed;
    ASSERT_TRUE(compress(compression::gzip, zeros, packed).has_value());
    byte_buffer set;
    append_legacy_message(set, message(1, 0, std::nullopt, packed.view(), 0,
                                       static_cast<std::int8_t>(compression::gzip)));
    legacy_decode_options o;
    o.max_decompressed = mib;

    auto d = decode_legacy_messages(set.view(), o);

    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error(), errc::too_large);
}

TEST(LegacyMessageSet, DecompressionLimitCoversAllWrappersTogether) {
    auto set = wrapped_set(1, compression::gzip, 2, 0);
    auto second = wrapped_set(1, compression::gzip, 5, 0);
    set.append(second.view());
    auto one = decode_legacy_messages(wrapped_set(1, compression::gzip, 2, 0).view());
    ASSERT_TRUE(one.has_value());
    legacy_decode_options o;
    o.max_decompressed = one->storage.at(0).size() + 10;  // room for one wrapper, not two

    auto d = decode_legacy_messages(set.view(), o);

    ASSERT_FALSE(d.has_value());
    EXPECT_EQ(d.error(), errc::too_large);
}

// --- conversion ---------------------------------------------------------------------------

TEST(LegacyConversion, MessageSetBecomesOneBatchWithTheSameRecords) {
    auto set = wrapped_set(1, compression::gzip, 2, 0);

    auto batch = convert_legacy_to_batch(set.view());
    ASSERT_TRUE(batch.has_value()) << batch.error().message();
    auto decoded = decode_batch(batch->view(), mib);

    ASSERT_TRUE(decoded.has_value()) << decoded.error().message();
    EXPECT_EQ(decoded->header.codec(), compression::gzip);  // the producer's codec is kept
    EXPECT_EQ(decoded->header.producer_id, -1);
    ASSERT_EQ(decoded->records.size(), 3u);
    const auto& r = decoded->records;
    EXPECT_EQ(text(r[0].key), "k0");
    EXPECT_EQ(text(r[0].value), "v0");
    EXPECT_EQ(text(r[1].key), "<null>");
    EXPECT_EQ(text(r[2].value), "<null>");
    EXPECT_EQ(r[0].timestamp, 100);
    EXPECT_EQ(r[2].timestamp, 300);
    EXPECT_EQ(r[2].offset_delta, 2);
    EXPECT_EQ(decoded->header.max_timestamp, 300);
}

TEST(LegacyConversion, Magic0MessagesGetNoTimestamp) {
    auto set = plain_set(0, 0);

    auto batch = convert_legacy_to_batch(set.view());
    ASSERT_TRUE(batch.has_value());
    auto decoded = decode_batch(batch->view(), mib);

    ASSERT_TRUE(decoded.has_value());
    for (const auto& r : decoded->records) {
        EXPECT_EQ(r.timestamp, -1);
    }
}

TEST(LegacyConversion, TargetCodecCanBeChosen) {
    auto set = plain_set(1, 0);
    legacy_to_batch_options o;
    o.codec = compression::zstd;

    auto batch = convert_legacy_to_batch(set.view(), o);

    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(read_batch_header(batch->view())->codec(), compression::zstd);
}

TEST(LegacyConversion, EmptyMessageSetIsInvalid) {
    auto batch = convert_legacy_to_batch(bytes_view{});

    ASSERT_FALSE(batch.has_value());
    EXPECT_EQ(batch.error(), errc::invalid_value);
}

/// Two stored batches (the second compressed and starting at offset 103) and a commit marker
/// between them, as a fetch would read them from the log.
byte_buffer stored_batches() {
    byte_buffer log;
    batch_options o;
    o.base_offset = 100;
    record_batch_builder first(o);
    std::array<header_view, 1> headers = {header_view{"h", as_bytes("dropped")}};
    first.add(as_bytes("a"), as_bytes("va"), 1000, headers);
    first.add(std::nullopt, as_bytes("vb"), 1001);
    log.append(first.finish()->view());

    auto marker = build_control_batch(control_record_type::commit, 1, 0, 0, 1002);
    set_base_offset(marker->mutable_view(), 102);
    log.append(marker->view());

    o.base_offset = 103;
    o.codec = compression::snappy;
    record_batch_builder second(o);
    second.add(as_bytes("c"), std::nullopt, 1003);
    log.append(second.finish()->view());
    return log;
}

TEST(LegacyConversion, BatchesDownConvertToMagic1) {
    auto log = stored_batches();

    auto set = convert_batches_to_legacy(log.view(), 1, mib);
    ASSERT_TRUE(set.has_value()) << set.error().message();
    auto d = decode_legacy_messages(set->view());

    ASSERT_TRUE(d.has_value()) << d.error().message();
    ASSERT_EQ(d->messages.size(), 3u);       // the commit marker is skipped
    EXPECT_EQ(d->codec, compression::none);  // re-emitted uncompressed
    const auto& m = d->messages;
    EXPECT_EQ(m[0].offset, 100);
    EXPECT_EQ(m[1].offset, 101);
    EXPECT_EQ(m[2].offset, 103);
    EXPECT_EQ(m[0].magic, 1);
    EXPECT_EQ(m[0].timestamp, 1000);
    EXPECT_EQ(m[2].timestamp, 1003);
    EXPECT_EQ(text(m[0].key), "a");
    EXPECT_EQ(text(m[1].key), "<null>");
    EXPECT_EQ(text(m[2].value), "<null>");
}

TEST(LegacyConversion, BatchesDownConvertToMagic0) {
    auto log = stored_batches();

    auto set = convert_batches_to_legacy(log.view(), 0, mib);
    ASSERT_TRUE(set.has_value());
    auto d = decode_legacy_messages(set->view());

    ASSERT_TRUE(d.has_value());
    ASSERT_EQ(d->messages.size(), 3u);
    EXPECT_EQ(d->max_magic, 0);
    EXPECT_EQ(d->messages[0].timestamp, -1);
    EXPECT_EQ(text(d->messages[1].value), "vb");
}

TEST(LegacyConversion, LogAppendTimeSurvivesDownConversionToMagic1) {
    record_batch_builder b;
    b.add(std::nullopt, as_bytes("x"), 5);
    auto batch = b.finish();
    ASSERT_TRUE(batch.has_value());
    set_log_append_time(batch->mutable_view(), 777);

    auto set = convert_batches_to_legacy(batch->view(), 1, mib);
    ASSERT_TRUE(set.has_value());
    auto d = decode_legacy_messages(set->view());

    ASSERT_TRUE(d.has_value());
    ASSERT_EQ(d->messages.size(), 1u);
    EXPECT_EQ(d->messages[0].timestamp, 777);
    EXPECT_TRUE(d->messages[0].log_append_time());
}

TEST(LegacyConversion, PartialBatchAtTheEndIsIgnored) {
    auto log = stored_batches();

    auto set = convert_batches_to_legacy(log.view().first(log.size() - 5), 1, mib);
    ASSERT_TRUE(set.has_value());
    auto d = decode_legacy_messages(set->view());

    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->messages.size(), 2u);
}

TEST(LegacyConversion, RecordsBelowTheFetchOffsetAreSkipped) {
    auto log = stored_batches();

    auto set = convert_batches_to_legacy(log.view(), 1, mib, 101);
    ASSERT_TRUE(set.has_value());
    auto d = decode_legacy_messages(set->view());

    ASSERT_TRUE(d.has_value());
    ASSERT_EQ(d->messages.size(), 2u);
    EXPECT_EQ(d->messages[0].offset, 101);
    EXPECT_EQ(d->messages[1].offset, 103);
}

TEST(LegacyConversion, MagicAboveOneIsRefused) {
    auto log = stored_batches();

    auto set = convert_batches_to_legacy(log.view(), 2, mib);

    ASSERT_FALSE(set.has_value());
    EXPECT_EQ(set.error(), errc::invalid_value);
}

TEST(LegacyConversion, LegacyToBatchToLegacyKeepsEveryMessage) {
    auto original = plain_set(1, 0);
    auto batch = convert_legacy_to_batch(original.view());
    ASSERT_TRUE(batch.has_value());
    set_base_offset(batch->mutable_view(), 0);

    auto back = convert_batches_to_legacy(batch->view(), 1, mib);

    ASSERT_TRUE(back.has_value());
    ASSERT_EQ(back->size(), original.size());
    EXPECT_TRUE(std::equal(original.view().begin(), original.view().end(), back->view().begin()));
}

TEST(LegacyConversion, FetchVersionPicksTheMagic) {
    EXPECT_EQ(legacy_magic_for_fetch(0), 0);
    EXPECT_EQ(legacy_magic_for_fetch(1), 0);
    EXPECT_EQ(legacy_magic_for_fetch(2), 1);
    EXPECT_EQ(legacy_magic_for_fetch(3), 1);
    EXPECT_EQ(legacy_magic_for_fetch(4), 2);
}

}  // namespace
}  // namespace sluice::protocol::kafka
