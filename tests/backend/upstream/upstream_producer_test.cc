// backend/upstream's producer against librdkafka's mock cluster: what send() answers is what a
// plain librdkafka consumer reads back.
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>

#include "tests/backend/upstream/upstream_support.h"

namespace sluice::backend::upstream::test {
namespace {

using namespace std::chrono_literals;

/// The LogAppendTime the librdkafka 2.0.2 mock puts in every Produce answer.
constexpr std::int64_t mock_log_append_time = 1234;

api::outgoing_record record(std::optional<std::string> key, std::string value) {
    api::outgoing_record r;
    r.key = std::move(key);
    r.value = std::move(value);
    return r;
}

using UpstreamProducer = UpstreamTest;

TEST_F(UpstreamProducer, DeliveriesMatchWhatAConsumerReadsBack) {
    const auto topic = unique_name("produce");
    ASSERT_TRUE(cluster().create_topic(topic, 3));
    auto& client = open();

    std::vector<api::outgoing_record> records;
    for (int i = 0; i < 4; ++i) {
        auto r = record("k" + std::to_string(i), "v" + std::to_string(i));
        r.partition = 1;
        r.timestamp = 1'700'000'000'000 + i;
        r.headers = {{"h", "x" + std::to_string(i)}, {"null", std::nullopt}};
        records.push_back(std::move(r));
    }
    auto sent = run(client.producer().send(topic_name(topic), records, {}));
    ASSERT_TRUE(sent) << sent.error().text();
    ASSERT_EQ(sent->size(), 4u);
    for (int i = 0; i < 4; ++i) {
        const auto& d = (*sent)[i];
        EXPECT_FALSE(d.error) << d.error.text();
        EXPECT_EQ(d.partition, 1);
        EXPECT_EQ(d.offset, i);
        // As stored: the 2.0.2 mock answers every produce with a LogAppendTime of its own.
        EXPECT_TRUE(d.timestamp == 1'700'000'000'000 + i || d.timestamp == mock_log_append_time)
            << d.timestamp;
    }

    auto read = read_partition(cluster().bootstrap(), topic, 1, 4);
    ASSERT_EQ(read.size(), 4u);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(read[i].offset, (*sent)[i].offset);
        EXPECT_EQ(read[i].key, records[i].key);
        EXPECT_EQ(read[i].value, records[i].value);
        EXPECT_EQ(read[i].timestamp, records[i].timestamp);
        ASSERT_EQ(read[i].headers.size(), 2u);
        EXPECT_EQ(read[i].headers[0].first, "h");
        EXPECT_EQ(read[i].headers[0].second, "x" + std::to_string(i));
        EXPECT_EQ(read[i].headers[1].first, "null");
        EXPECT_FALSE(read[i].headers[1].second);
    }
}

TEST_F(UpstreamProducer, KeysGoWhereTheJavaProducerPutsThem) {
    // Expected partitions of Kafka's Java producer (murmur2) for a 12-partition topic, as in
    // tests/gateway/http_codec_test.cc.
    const auto topic = unique_name("keyed");
    ASSERT_TRUE(cluster().create_topic(topic, 12));
    auto& client = open();
    auto sent = run(client.producer().send(
        topic_name(topic), {record("kafka", "a"), record("giberish123456789", "b")}, {}));
    ASSERT_TRUE(sent) << sent.error().text();
    EXPECT_EQ((*sent)[0].partition, 4);
    EXPECT_EQ((*sent)[1].partition, 8);
}

TEST_F(UpstreamProducer, RecordsWithoutKeyShareOnePartitionPerCallRoundRobin) {
    const auto topic = unique_name("sticky");
    ASSERT_TRUE(cluster().create_topic(topic, 3));
    auto& client = open();
    std::set<std::int32_t> used;
    for (int call = 0; call < 3; ++call) {
        auto sent = run(client.producer().send(
            topic_name(topic), {record(std::nullopt, "a"), record(std::nullopt, "b")}, {}));
        ASSERT_TRUE(sent) << sent.error().text();
        EXPECT_EQ((*sent)[0].partition, (*sent)[1].partition);
        EXPECT_EQ((*sent)[1].offset, (*sent)[0].offset + 1);
        used.insert((*sent)[0].partition);
    }
    EXPECT_EQ(used.size(), 3u);  // three calls, three partitions
}

TEST_F(UpstreamProducer, UnknownTopicFailsFastAndIsNotCreated) {
    auto& client = open();
    const auto topic = unique_name("missing");
    const auto start = std::chrono::steady_clock::now();
    auto sent = run(client.producer().send(topic_name(topic), {record("k", "v")}, {}));
    ASSERT_FALSE(sent);
    EXPECT_EQ(sent.error().reason(), api::errc::unknown_topic_or_partition);
    EXPECT_NE(sent.error().text().find(topic), std::string::npos);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);

    auto described = run(client.admin().describe_topic(topic_name(topic)));
    ASSERT_FALSE(described);
    EXPECT_EQ(described.error().reason(), api::errc::unknown_topic_or_partition);
    auto count = run(client.producer().partitions(topic_name(topic)));
    ASSERT_FALSE(count);
    EXPECT_EQ(count.error().reason(), api::errc::unknown_topic_or_partition);
}

TEST_F(UpstreamProducer, APartitionTheTopicLacksFailsTheCall) {
    const auto topic = unique_name("parts");
    ASSERT_TRUE(cluster().create_topic(topic, 2));
    auto& client = open();
    auto r = record("k", "v");
    r.partition = 5;
    auto sent = run(client.producer().send(topic_name(topic), {record("a", "b"), r}, {}));
    ASSERT_FALSE(sent);
    EXPECT_EQ(sent.error().reason(), api::errc::unknown_topic_or_partition);
    EXPECT_NE(sent.error().text().find("partition 5"), std::string::npos);
    auto count = run(client.producer().partitions(topic_name(topic)));
    ASSERT_TRUE(count);
    EXPECT_EQ(*count, 2);
}

TEST_F(UpstreamProducer, RecordsNotAcknowledgedByTheDeadlineTimeOut) {
    const auto topic = unique_name("slow");
    ASSERT_TRUE(cluster().create_topic(topic, 1));
    auto& client = open();
    // Warm the topic cache, then slow every broker down past the call's deadline.
    ASSERT_TRUE(run(client.producer().partitions(topic_name(topic))));
    for (int b = 1; b <= 3; ++b) {
        cluster().set_rtt(b, 3000);
    }
    api::send_options opts;
    opts.timeout = 500ms;
    const auto start = std::chrono::steady_clock::now();
    auto sent = run(client.producer().send(topic_name(topic), {record("k", "v")}, opts));
    const auto took = std::chrono::steady_clock::now() - start;
    for (int b = 1; b <= 3; ++b) {
        cluster().set_rtt(b, 0);
    }
    ASSERT_TRUE(sent) << sent.error().text();
    ASSERT_EQ(sent->size(), 1u);
    EXPECT_EQ((*sent)[0].error.reason(), api::errc::request_timed_out);
    EXPECT_LT(took, 2s);
    EXPECT_EQ(client.statistics().errors.at("request_timed_out"), 1);
}

TEST_F(UpstreamProducer, AFullLocalQueueWaitsInsteadOfDropping) {
    const auto topic = unique_name("queue-full");
    ASSERT_TRUE(cluster().create_topic(topic, 1));
    // Room for 5 records: a 40-record call fills the queue many times over.
    auto& client = open({{"queue.buffering.max.messages", "5"}});
    std::vector<api::outgoing_record> records;
    for (int i = 0; i < 40; ++i) {
        records.push_back(record(std::nullopt, "v" + std::to_string(i)));
        records.back().partition = 0;
    }
    auto sent = run(client.producer().send(topic_name(topic), records, {}));
    ASSERT_TRUE(sent) << sent.error().text();
    ASSERT_EQ(sent->size(), 40u);
    for (int i = 0; i < 40; ++i) {
        EXPECT_FALSE((*sent)[i].error) << i << ": " << (*sent)[i].error.text();
        EXPECT_EQ((*sent)[i].offset, i);
    }
}

TEST_F(UpstreamProducer, ARecordOverTheSizeLimitFailsAlone) {
    const auto topic = unique_name("too-large");
    ASSERT_TRUE(cluster().create_topic(topic, 1));
    auto& client = open({{"message.max.bytes", "2000"}});
    std::vector<api::outgoing_record> records = {record("a", "small"),
                                                 record("b", std::string(10'000, 'x')),
                                                 record("c", "small")};
    for (auto& r : records) {
        r.partition = 0;
    }
    auto sent = run(client.producer().send(topic_name(topic), records, {}));
    ASSERT_TRUE(sent) << sent.error().text();
    EXPECT_FALSE((*sent)[0].error);
    EXPECT_EQ((*sent)[1].error.reason(), api::errc::message_too_large);
    EXPECT_FALSE((*sent)[2].error);
    EXPECT_EQ((*sent)[2].offset, (*sent)[0].offset + 1);
}

TEST_F(UpstreamProducer, AcksNoneAnswersOnceQueued) {
    const auto topic = unique_name("acks0");
    ASSERT_TRUE(cluster().create_topic(topic, 1));
    auto& client = open();
    api::send_options opts;
    opts.acks = api::acks::none;
    auto sent = run(client.producer().send(topic_name(topic), {record("k", "v")}, opts));
    ASSERT_TRUE(sent) << sent.error().text();
    EXPECT_FALSE((*sent)[0].error);
    EXPECT_EQ((*sent)[0].offset, -1);
    EXPECT_EQ(read_partition(cluster().bootstrap(), topic, 0, 1).size(), 1u);
}

TEST_F(UpstreamProducer, ConcurrentCallsLoseNothingAndKeepEachCallsOrder) {
    // Many calls at once into one partition: every record stored once, each call's records in
    // the call's order, what the calls answered is where a plain consumer finds the records.
    const auto topic = unique_name("concurrent");
    ASSERT_TRUE(cluster().create_topic(topic, 1));
    auto& client = open();
    constexpr int calls = 32;
    constexpr int per_call = 20;
    std::vector<std::optional<api::backend_result<std::vector<api::delivery>>>> answers(calls);
    int answered = 0;
    for (int c = 0; c < calls; ++c) {
        std::vector<api::outgoing_record> records;
        for (int i = 0; i < per_call; ++i) {
            auto r = record(std::nullopt, "c" + std::to_string(c) + "-" + std::to_string(i));
            r.partition = 0;
            records.push_back(std::move(r));
        }
        boost::asio::co_spawn(*io_, client.producer().send(topic_name(topic), records, {}),
                              [&answers, &answered, c](std::exception_ptr e, auto result) {
                                  ASSERT_FALSE(e);
                                  answers[c] = std::move(result);
                                  ++answered;
                              });
    }
    ASSERT_TRUE(run_until([&] { return answered == calls; }));

    std::map<std::int64_t, std::string> by_offset;  // what the calls were told
    for (int c = 0; c < calls; ++c) {
        ASSERT_TRUE(*answers[c]) << answers[c]->error().text();
        const auto& sent = **answers[c];
        ASSERT_EQ(sent.size(), static_cast<std::size_t>(per_call));
        for (int i = 0; i < per_call; ++i) {
            EXPECT_FALSE(sent[i].error) << sent[i].error.text();
            if (i > 0) {
                EXPECT_GT(sent[i].offset, sent[i - 1].offset) << "call " << c << " record " << i;
            }
            const bool fresh =
                by_offset.emplace(sent[i].offset, "c" + std::to_string(c) + "-" +
                                                      std::to_string(i)).second;
            EXPECT_TRUE(fresh) << "offset " << sent[i].offset << " answered twice";
        }
    }
    auto read = read_partition(cluster().bootstrap(), topic, 0, calls * per_call);
    ASSERT_EQ(read.size(), static_cast<std::size_t>(calls * per_call));
    std::map<int, int> next_of_call;  // call -> the index its next record must have
    for (const auto& r : read) {
        ASSERT_TRUE(r.value);
        EXPECT_EQ(by_offset[r.offset], *r.value) << "offset " << r.offset;
        const auto dash = r.value->find('-');
        const int c = std::stoi(r.value->substr(1, dash - 1));
        const int i = std::stoi(r.value->substr(dash + 1));
        EXPECT_EQ(next_of_call[c], i) << "call " << c << " out of order at offset " << r.offset;
        next_of_call[c] = i + 1;
    }
    EXPECT_EQ(next_of_call.size(), static_cast<std::size_t>(calls));
}

}  // namespace
}  // namespace sluice::backend::upstream::test
