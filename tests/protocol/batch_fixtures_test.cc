// Record batches captured from real clients (tests/fixtures/batches/README.md).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "protocol/kafka/record.h"
#include "protocol/kafka/record_batch.h"
#include "protocol/kafka/record_batch_builder.h"
#include "tests/protocol/batch_test_support.h"

namespace sluice::protocol::kafka {
namespace {

using testing::read_fixture;
using testing::text;

using testing::mib;

std::string repeat(const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) {
        out += s;
    }
    return out;
}

/// "name=value" for each header, joined by commas ("name=<null>" for a null value).
std::string headers_text(const record_view& r) {
    std::string out;
    for (const auto& h : r.headers) {
        if (!out.empty()) {
            out += ",";
        }
        out += std::string(h.key) + "=" + text(h.value);
    }
    return out;
}

/// The four records the librdkafka fixtures share (see the README).
void expect_librdkafka_records(const std::string& file, compression codec) {
    auto batch = read_fixture("batches/" + file);

    auto decoded = decode_batch(batch, mib);

    ASSERT_TRUE(decoded.has_value()) << decoded.error().message();
    EXPECT_EQ(decoded->header.codec(), codec);
    ASSERT_EQ(decoded->records.size(), 4u);
    const auto& r = decoded->records;
    EXPECT_EQ(text(r[0].key), "key-0");
    EXPECT_EQ(text(r[0].value), repeat("value 0 ", 8));
    EXPECT_EQ(text(r[1].key), "key-1");
    EXPECT_EQ(headers_text(r[1]), "h1=one,h2=<null>");
    EXPECT_EQ(text(r[2].key), "<null>");
    EXPECT_EQ(text(r[2].value), repeat("value 2 ", 8));
    EXPECT_EQ(text(r[3].key), "key-3");
    EXPECT_EQ(text(r[3].value), "<null>");
    for (std::size_t i = 0; i < r.size(); ++i) {
        EXPECT_EQ(r[i].offset_delta, static_cast<std::int32_t>(i));
    }
}

TEST(RealClientBatch, LibrdkafkaSnappyBatchDecodes) {
    expect_librdkafka_records("librdkafka_snappy.bin", compression::snappy);
}

TEST(RealClientBatch, LibrdkafkaLz4BatchDecodes) {
    expect_librdkafka_records("librdkafka_lz4.bin", compression::lz4);
}

TEST(RealClientBatch, LibrdkafkaZstdBatchDecodes) {
    expect_librdkafka_records("librdkafka_zstd.bin", compression::zstd);
}

TEST(RealClientBatch, KafkaPythonGzipBatchDecodes) {
    auto batch = read_fixture("batches/kafka_python_gzip.bin");

    auto decoded = decode_batch(batch, mib);

    ASSERT_TRUE(decoded.has_value()) << decoded.error().message();
    EXPECT_EQ(decoded->header.codec(), compression::gzip);
    ASSERT_EQ(decoded->records.size(), 3u);
    const auto& r = decoded->records;
    EXPECT_EQ(text(r[0].key), "k0");
    EXPECT_EQ(text(r[0].value), "kafka-python value 0");
    EXPECT_EQ(headers_text(r[0]), "trace=abc");
    EXPECT_EQ(text(r[2].key), "<null>");
    EXPECT_EQ(text(r[2].value), "kafka-python value 2");
}

TEST(RealClientBatch, KcatUncompressedBatchDecodes) {
    auto batch = read_fixture("batches/kcat_uncompressed.bin");

    auto decoded = decode_batch(batch, mib);

    ASSERT_TRUE(decoded.has_value()) << decoded.error().message();
    ASSERT_EQ(decoded->records.size(), 5u);
    EXPECT_EQ(text(decoded->records[0].key), "key-1");
    EXPECT_EQ(text(decoded->records[0].value), "plain value 1");
    EXPECT_EQ(headers_text(decoded->records[0]), "h1=v1,h2=v2");
    EXPECT_EQ(text(decoded->records[4].key), "key-9");
    EXPECT_EQ(decoded->header.producer_id, -1);
}

TEST(RealClientBatch, KafkajsTransactionalBatchDecodes) {
    auto batch = read_fixture("batches/kafkajs_transactional.bin");

    auto decoded = decode_batch(batch, mib);

    ASSERT_TRUE(decoded.has_value()) << decoded.error().message();
    EXPECT_TRUE(decoded->header.is_transactional());
    EXPECT_EQ(decoded->header.producer_id, 364742000);
    EXPECT_EQ(decoded->header.base_sequence, 0);
    ASSERT_EQ(decoded->records.size(), 3u);
    EXPECT_EQ(text(decoded->records[1].key), "key-4");
    EXPECT_EQ(headers_text(decoded->records[1]), "h1=v1,seq=4");
}

TEST(RealClientBatch, SummaryOfEveryFixtureIsConsecutive) {
    for (const char* file :
         {"kcat_uncompressed.bin", "kafkajs_transactional.bin", "kafka_python_gzip.bin",
          "librdkafka_snappy.bin", "librdkafka_lz4.bin", "librdkafka_zstd.bin"}) {
        auto batch = read_fixture(std::string("batches/") + file);
        auto s = summarize_records(batch, mib);
        ASSERT_TRUE(s.has_value()) << file;
        EXPECT_TRUE(s->offsets_consecutive) << file;
    }
}

TEST(RealClientBatch, BuilderReproducesTheKcatBatchByteForByte) {
    auto original = read_fixture("batches/kcat_uncompressed.bin");
    auto decoded = decode_batch(original, mib);
    ASSERT_TRUE(decoded.has_value());
    const auto& h = decoded->header;

    batch_options o;
    o.base_offset = h.base_offset;
    o.partition_leader_epoch = h.partition_leader_epoch;
    o.producer_id = h.producer_id;
    o.producer_epoch = h.producer_epoch;
    o.base_sequence = h.base_sequence;
    record_batch_builder b(o);
    for (const auto& r : decoded->records) {
        std::vector<header_view> headers(r.headers.begin(), r.headers.end());
        b.add(r.key, r.value, r.timestamp, headers);
    }
    auto rebuilt = b.finish();

    ASSERT_TRUE(rebuilt.has_value());
    ASSERT_EQ(rebuilt->size(), original.size());
    EXPECT_TRUE(std::equal(original.begin(), original.end(), rebuilt->view().begin()));
}

}  // namespace
}  // namespace sluice::protocol::kafka
