#include "protocol/kafka/compression.h"

#include <gtest/gtest.h>
#include <lz4frame.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/core/errc.h"
#include "tests/protocol/batch_test_support.h"

namespace sluice::protocol::kafka {
namespace {

using testing::bytes_of;
using testing::compressible_text;
using testing::noise;
using testing::text;

using testing::mib;

struct codec_case {
    compression codec;
    snappy_framing framing;
    const char* name;
};

const codec_case all_codecs[] = {
    {compression::gzip, snappy_framing::raw, "gzip"},
    {compression::snappy, snappy_framing::raw, "snappy_raw"},
    {compression::snappy, snappy_framing::xerial, "snappy_xerial"},
    {compression::lz4, snappy_framing::raw, "lz4"},
    {compression::zstd, snappy_framing::raw, "zstd"},
};

byte_buffer compressed(const codec_case& c, bytes_view input) {
    byte_buffer out;
    compress_options o;
    o.snappy = c.framing;
    auto r = compress(c.codec, input, out, o);
    EXPECT_TRUE(r.has_value());
    return out;
}

byte_buffer compressed(compression codec, bytes_view input) {
    return compressed(codec_case{codec, snappy_framing::raw, ""}, input);
}

class CompressionRoundTrip : public ::testing::TestWithParam<codec_case> {};

TEST_P(CompressionRoundTrip, RestoresCompressibleText) {
    std::string input = compressible_text(200 * 1024);  // several lz4 and xerial blocks
    auto packed = compressed(GetParam(), as_bytes(input));
    EXPECT_LT(packed.size(), input.size() / 2);

    byte_buffer out;
    auto r = decompress(GetParam().codec, packed.view(), out, mib);

    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_EQ(text(out.view()), input);
}

TEST_P(CompressionRoundTrip, RestoresIncompressibleBytes) {
    auto input = noise(70 * 1024);
    auto packed = compressed(GetParam(), input);

    byte_buffer out;
    auto r = decompress(GetParam().codec, packed.view(), out, mib);

    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_TRUE(std::equal(input.begin(), input.end(), out.view().begin(), out.view().end()));
}

TEST_P(CompressionRoundTrip, RestoresEmptyInput) {
    auto packed = compressed(GetParam(), bytes_view{});

    byte_buffer out;
    auto r = decompress(GetParam().codec, packed.view(), out, mib);

    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_EQ(out.size(), 0u);
}

TEST_P(CompressionRoundTrip, AppendsAfterExistingBytes) {
    byte_buffer out;
    out.append(as_bytes("prefix:"));
    auto packed = compressed(GetParam(), as_bytes("payload"));

    auto r = decompress(GetParam().codec, packed.view(), out, mib);

    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(text(out.view()), "prefix:payload");
}

TEST_P(CompressionRoundTrip, OutputOneByteOverTheLimitIsTooLarge) {
    std::string input = compressible_text(10000);
    auto packed = compressed(GetParam(), as_bytes(input));

    byte_buffer exact;
    byte_buffer over;
    auto at_limit = decompress(GetParam().codec, packed.view(), exact, input.size());
    auto past_limit = decompress(GetParam().codec, packed.view(), over, input.size() - 1);

    EXPECT_TRUE(at_limit.has_value());
    ASSERT_FALSE(past_limit.has_value());
    EXPECT_EQ(past_limit.error(), errc::too_large);
}

TEST_P(CompressionRoundTrip, TruncatedInputFails) {
    std::string input = compressible_text(50000);
    auto packed = compressed(GetParam(), as_bytes(input));

    byte_buffer out;
    auto r = decompress(GetParam().codec, packed.view().first(packed.size() / 2), out, mib);

    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::compression_error);
    EXPECT_EQ(out.size(), 0u);  // nothing left behind by a failed call
}

INSTANTIATE_TEST_SUITE_P(Compression, CompressionRoundTrip, ::testing::ValuesIn(all_codecs),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Compression, LargestSizeLimitMeansNoLimit) {
    auto packed = compressed(compression::gzip, as_bytes("no limit"));

    byte_buffer out;
    auto r = decompress(compression::gzip, packed.view(), out, SIZE_MAX);

    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(text(out.view()), "no limit");
}

TEST(Compression, GarbageInputFailsForEveryCodec) {
    std::vector<std::byte> garbage(64, std::byte{0xff});
    for (auto codec :
         {compression::gzip, compression::snappy, compression::lz4, compression::zstd}) {
        byte_buffer out;
        auto r = decompress(codec, garbage, out, mib);
        ASSERT_FALSE(r.has_value()) << static_cast<int>(codec);
        EXPECT_EQ(r.error(), errc::compression_error);
    }
}

TEST(Compression, EmptyInputFails) {
    byte_buffer out;
    auto r = decompress(compression::zstd, bytes_view{}, out, mib);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::compression_error);
}

TEST(Compression, UnknownCodecIsUnsupported) {
    byte_buffer out;
    auto r = decompress(static_cast<compression>(5), as_bytes("x"), out, mib);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::unsupported_compression);
}

TEST(Compression, GzipBombIsTooLarge) {
    std::vector<std::byte> zeros(32 * mib);
    auto bomb = compressed(compression::gzip, zeros);
    ASSERT_LT(bomb.size(), 64u * 1024);  // tiny input ...

    byte_buffer out;
    auto r = decompress(compression::gzip, bomb.view(), out, mib);  // ... far past the limit

    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::too_large);
    EXPECT_LE(out.capacity(), 2 * mib);  // never grew toward the full expansion
}

TEST(Compression, ZstdBombWithoutContentSizeIsTooLarge) {
    // A streamed frame does not state its size up front: the limit must stop the decoder.
    std::vector<std::byte> zeros(64 * mib);
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
    std::vector<std::byte> bomb(ZSTD_compressBound(zeros.size()));
    std::size_t n = ZSTD_compress2(cctx, bomb.data(), bomb.size(), zeros.data(), zeros.size());
    ZSTD_freeCCtx(cctx);
    ASSERT_FALSE(ZSTD_isError(n));
    bomb.resize(n);
    ASSERT_EQ(ZSTD_getFrameContentSize(bomb.data(), bomb.size()), ZSTD_CONTENTSIZE_UNKNOWN);

    byte_buffer out;
    auto r = decompress(compression::zstd, bomb, out, mib);

    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::too_large);
    EXPECT_LE(out.capacity(), 2 * mib);
}

TEST(Compression, ZstdDeclaredSizeOverLimitIsRejectedUpFront) {
    std::vector<std::byte> zeros(8 * mib);
    auto bomb = compressed(compression::zstd, zeros);

    byte_buffer out;
    auto r = decompress(compression::zstd, bomb.view(), out, mib);

    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::too_large);
    EXPECT_EQ(out.capacity(), 0u);
}

TEST(Compression, Lz4BombIsTooLarge) {
    std::vector<std::byte> zeros(16 * mib);
    auto bomb = compressed(compression::lz4, zeros);

    byte_buffer out;
    auto r = decompress(compression::lz4, bomb.view(), out, mib);

    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::too_large);
}

TEST(Compression, SnappyClaimedLengthOverLimitIsRejectedBeforeAllocating) {
    // A raw snappy block starts with its uncompressed length as a varint: claim 1 GiB.
    std::vector<std::byte> lie = {std::byte{0x80}, std::byte{0x80}, std::byte{0x80},
                                  std::byte{0x80}, std::byte{0x04}, std::byte{0x00}};
    byte_buffer out;
    auto r = decompress(compression::snappy, lie, out, mib);

    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::too_large);
    EXPECT_EQ(out.capacity(), 0u);
}

TEST(Compression, XerialSnappyIsDetectedAndSplitIntoBlocks) {
    std::string input = compressible_text(100 * 1024);
    byte_buffer out;
    compress_options o;
    o.snappy = snappy_framing::xerial;
    ASSERT_TRUE(compress(compression::snappy, as_bytes(input), out, o).has_value());

    ASSERT_TRUE(is_xerial_snappy(out.view()));
    EXPECT_EQ(load_i32(out.data() + 8), 1);   // version
    EXPECT_EQ(load_i32(out.data() + 12), 1);  // minimum compatible version
    std::size_t blocks = 0;
    for (std::size_t at = 16; at < out.size(); at += 4 + load_i32(out.data() + at)) {
        ++blocks;
    }
    EXPECT_EQ(blocks, 4u);  // 100 KiB in 32 KiB blocks
}

TEST(Compression, RawSnappyIsNotTakenForXerial) {
    byte_buffer out;
    compress_options o;
    o.snappy = snappy_framing::raw;
    ASSERT_TRUE(compress(compression::snappy, as_bytes("hello hello hello"), out, o).has_value());
    EXPECT_FALSE(is_xerial_snappy(out.view()));
}

TEST(Compression, XerialBlockLengthPastEndFails) {
    byte_buffer out;
    compress_options o;
    o.snappy = snappy_framing::xerial;
    ASSERT_TRUE(compress(compression::snappy, as_bytes("some text"), out, o).has_value());
    store_i32(out.data() + 16, 1000);  // the first block claims more than is there

    byte_buffer plain;
    auto r = decompress(compression::snappy, out.view(), plain, mib);

    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::compression_error);
}

TEST(Compression, ConcatenatedGzipMembersAreAllRead) {
    auto a = compressed(compression::gzip, as_bytes("first,"));
    auto b = compressed(compression::gzip, as_bytes("second"));
    a.append(b.view());

    byte_buffer out;
    ASSERT_TRUE(decompress(compression::gzip, a.view(), out, mib).has_value());
    EXPECT_EQ(text(out.view()), "first,second");
}

TEST(Compression, ConcatenatedZstdFramesAreAllRead) {
    auto a = compressed(compression::zstd, as_bytes("first,"));
    auto b = compressed(compression::zstd, as_bytes("second"));
    a.append(b.view());

    byte_buffer out;
    ASSERT_TRUE(decompress(compression::zstd, a.view(), out, mib).has_value());
    EXPECT_EQ(text(out.view()), "first,second");
}

TEST(Compression, Lz4FramesUseIndependentBlocks) {
    auto packed = compressed(compression::lz4, as_bytes(compressible_text(1000)));
    ASSERT_GE(packed.size(), 7u);
    auto flg = static_cast<std::uint8_t>(packed.data()[4]);
    EXPECT_EQ(flg & 0xc0, 0x40);  // version 01
    EXPECT_NE(flg & 0x20, 0);     // block independence (Kafka's Java reader needs it)
    EXPECT_EQ(flg & 0x08, 0);     // no content size
}

TEST(Compression, Lz4BadHeaderChecksumIsRejected) {
    auto packed = compressed(compression::lz4, as_bytes(compressible_text(1000)));
    packed.data()[6] ^= std::byte{0x5a};  // HC after magic, FLG, BD

    byte_buffer out;
    auto r = decompress(compression::lz4, packed.view(), out, mib);

    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error(), errc::compression_error);
}

TEST(Compression, Lz4LegacyDecoderIgnoresHeaderChecksum) {
    std::string input = compressible_text(1000);
    auto packed = compressed(compression::lz4, as_bytes(input));
    packed.data()[6] ^= std::byte{0x5a};  // as Kafka 0.8 computed it: wrong

    byte_buffer out;
    auto r = decompress_lz4_ignoring_header_checksum(packed.view(), out, mib);

    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_EQ(text(out.view()), input);
}

TEST(Compression, Lz4LegacyDecoderHandlesContentSizeField) {
    // A frame with the optional 8-byte content size: the recomputed checksum must cover it.
    std::string input = compressible_text(5000);
    LZ4F_preferences_t prefs{};
    prefs.frameInfo.contentSize = input.size();
    std::vector<std::byte> frame(LZ4F_compressFrameBound(input.size(), &prefs));
    std::size_t n =
        LZ4F_compressFrame(frame.data(), frame.size(), input.data(), input.size(), &prefs);
    ASSERT_FALSE(LZ4F_isError(n));
    frame.resize(n);
    frame[4 + 2 + 8] ^= std::byte{0x33};

    byte_buffer out;
    auto r = decompress_lz4_ignoring_header_checksum(frame, out, mib);

    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_EQ(text(out.view()), input);
}

TEST(Compression, GzipWritesAGzipHeader) {
    auto packed = compressed(compression::gzip, as_bytes("abc"));
    ASSERT_GE(packed.size(), 2u);
    EXPECT_EQ(packed.data()[0], std::byte{0x1f});
    EXPECT_EQ(packed.data()[1], std::byte{0x8b});
}

}  // namespace
}  // namespace sluice::protocol::kafka
