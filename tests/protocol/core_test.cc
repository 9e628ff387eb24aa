#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/core/base64.h"
#include "protocol/core/bytes.h"
#include "protocol/core/crc32c.h"
#include "protocol/core/uuid.h"
#include "protocol/core/varint.h"

namespace sluice::protocol {
namespace {

TEST(Crc32c, MatchesKnownVector) {
    // The standard check value of CRC-32C over "123456789".
    EXPECT_EQ(crc32c(as_bytes("123456789")), 0xe3069283u);
    EXPECT_EQ(crc32c_portable(as_bytes("123456789")), 0xe3069283u);
}

TEST(Crc32c, HardwareAndPortableAgreeOnEveryLengthAndSplit) {
    std::string data;
    for (int i = 0; i < 300; ++i) {
        data.push_back(static_cast<char>(i * 31 + 7));
    }
    for (std::size_t n = 0; n < data.size(); n += 7) {
        auto b = as_bytes(std::string_view(data).substr(0, n));
        std::uint32_t whole = crc32c(b);
        EXPECT_EQ(whole, crc32c_portable(b));
        std::uint32_t split = crc32c(b.subspan(n / 2), crc32c(b.first(n / 2)));
        EXPECT_EQ(whole, split);
    }
}

TEST(Varint, ZigzagRoundTripsExtremes) {
    for (std::int64_t v : std::vector<std::int64_t>{0, 1, -1, 63, -64, 1LL << 40, INT64_MAX, INT64_MIN}) {
        EXPECT_EQ(unzigzag64(zigzag64(v)), v);
    }
    for (std::int32_t v : {0, 1, -1, INT32_MAX, INT32_MIN}) {
        EXPECT_EQ(unzigzag32(zigzag32(v)), v);
    }
}

TEST(Varint, WriterAndReaderAgree) {
    writer w;
    w.varint(-300);
    w.varlong(INT64_MIN);
    w.uvarint(0);
    w.uvarint(0xffffffffu);
    auto buf = w.flatten();
    reader r(buf.view());
    EXPECT_EQ(r.varint(), -300);
    EXPECT_EQ(r.varlong(), INT64_MIN);
    EXPECT_EQ(r.uvarint(), 0u);
    EXPECT_EQ(r.uvarint(), 0xffffffffu);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r.remaining(), 0u);
}

TEST(Reader, OverlongVarintFails) {
    std::vector<std::byte> b(11, std::byte{0xff});
    reader r(b);
    (void)r.uvarint();
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.error(), errc::invalid_varint);
}

TEST(Reader, LengthPastEndFailsWithoutAllocating) {
    writer w;
    w.i32(0x7fffffff);  // a bytes length far beyond the input
    auto buf = w.flatten();
    reader r(buf.view());
    EXPECT_LT(r.bytes_length(false), 0);
    EXPECT_FALSE(r.ok());
}

TEST(Reader, HugeArrayCountIsRejected) {
    writer w;
    w.i32(1 << 30);
    w.i32(1);
    auto buf = w.flatten();
    reader r(buf.view());
    EXPECT_EQ(r.array_length(false, 4), -1);
    EXPECT_FALSE(r.ok());
}

TEST(Reader, ErrorIsStickyAndReadsReturnZero) {
    std::byte one[1] = {std::byte{5}};
    reader r(one);
    EXPECT_EQ(r.i32(), 0);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.i8(), 0);  // even though a byte was there before the failure
    EXPECT_EQ(r.error(), errc::truncated);
}

TEST(Writer, ExternalChunksAreSplicedInOrder) {
    auto owner = std::make_shared<std::string>(std::string(1000, 'x'));
    writer w;
    w.i8(1);
    w.external(shared_bytes{owner, as_bytes(*owner)});
    w.i8(2);
    EXPECT_EQ(w.size(), 1002u);
    EXPECT_EQ(w.splices().size(), 1u);
    auto flat = w.flatten();
    ASSERT_EQ(flat.size(), 1002u);
    EXPECT_EQ(flat.data()[0], std::byte{1});
    EXPECT_EQ(flat.data()[1], std::byte{'x'});
    EXPECT_EQ(flat.data()[1001], std::byte{2});
}

TEST(Uuid, PrintsAndParsesBothForms) {
    uuid u = uuid::random();
    EXPECT_FALSE(u.is_zero());
    EXPECT_EQ(uuid::parse(u.to_string()), u);
    EXPECT_EQ(uuid::parse(u.to_base64()), u);
    EXPECT_EQ(u.to_base64().size(), 22u);
    EXPECT_TRUE(uuid::parse("not-a-uuid").is_zero());
}

TEST(Base64, RoundTripsEveryLengthInBothAlphabets) {
    std::string bytes;
    for (int n = 0; n < 40; ++n) {
        const auto standard = base64_encode(bytes);
        EXPECT_EQ(standard.size() % 4, 0u);
        EXPECT_EQ(base64_decode(standard), bytes);
        const auto url = base64_encode(bytes, base64_alphabet::url);
        EXPECT_EQ(url.find('='), std::string::npos);
        EXPECT_EQ(base64_decode(url, base64_alphabet::url), bytes);
        bytes.push_back(static_cast<char>(n * 37 + 250));
    }
}

TEST(Base64, EncodeAppendsToWhatIsThere) {
    std::string out = "x:";
    base64_encode("fo", out);
    EXPECT_EQ(out, "x:Zm8=");
    EXPECT_EQ(base64_encode("\xfb\xff", base64_alphabet::url), "-_8");
    EXPECT_EQ(base64_encode("\xfb\xff"), "+/8=");
}

TEST(Base64, PaddingIsRequiredOnlyWhereAsked) {
    EXPECT_EQ(base64_decode("Zm8="), "fo");
    EXPECT_FALSE(base64_decode("Zm8"));
    EXPECT_EQ(base64_decode("Zm8", base64_alphabet::standard, base64_padding::optional), "fo");
    EXPECT_EQ(base64_decode("Zm8=", base64_alphabet::standard, base64_padding::optional), "fo");
    EXPECT_EQ(base64_decode("Zm8", base64_alphabet::url), "fo");
}

TEST(Base64, RejectsWhatNoEncodingGives) {
    for (auto padding : {base64_padding::required, base64_padding::optional}) {
        const auto standard = base64_alphabet::standard;
        EXPECT_FALSE(base64_decode("Zm9v!", standard, padding));
        EXPECT_FALSE(base64_decode("Z", standard, padding));
        EXPECT_FALSE(base64_decode("Zm=8", standard, padding));
        EXPECT_FALSE(base64_decode("Zm8 ", standard, padding));
        EXPECT_FALSE(base64_decode("Zm9==", standard, padding));
        EXPECT_FALSE(base64_decode("Zm9=", standard, padding));  // non-zero bits after the last byte
        EXPECT_FALSE(base64_decode("-_8=", standard, padding));  // the other alphabet
    }
    EXPECT_FALSE(base64_decode("+/8", base64_alphabet::url));
}

}  // namespace
}  // namespace sluice::protocol
