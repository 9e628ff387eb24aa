// Client-level contract: the producer (backend/api/client.h api::producer). Offsets per call
// and partition, Kafka's key partitioning (murmur2, the Java producer's values), explicit
// partitions, timestamps, and the calls that fail (unknown topic or partition, a record over
// the topic's max.message.bytes). Tests may share a cluster: every topic name is unique.
#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/backend/contract/client_backends.h"

namespace sluice::backend::contract {
namespace {

struct producer_suite_names {
    template <typename F>
    static std::string GetName(int) {
        return std::string(F::name);
    }
};

template <typename F>
class ClientProducerContract : public ClientContract<F> {
protected:
    std::string make_topic(std::string_view stem, std::int32_t partitions,
                           std::map<std::string, std::string> configs = {}) {
        auto name = this->unique_topic(stem);
        api::new_topic spec{topic_name(name), partitions, std::move(configs), false};
        auto created = this->run(this->admin().create_topic(std::move(spec)));
        if (!created) {
            ADD_FAILURE() << "create " << name << ": " << created.error().text();
        }
        return name;
    }

    api::backend_result<std::vector<api::delivery>> send(const std::string& topic,
                                                         std::vector<api::outgoing_record> recs) {
        return this->run(this->producer().send(topic_name(topic), std::move(recs), {}));
    }

    std::int64_t latest(const std::string& topic, std::int32_t p) {
        std::vector<api::offset_query> q{
            {topic_name(topic), partition_id(p), {api::offset_spec::kind::latest, -1}}};
        auto found = this->run(this->admin().list_offsets(std::move(q),
                                                          api::isolation::read_uncommitted));
        return found.at(0).error ? -2 : found.at(0).off.value;
    }

    static api::outgoing_record value(std::string v) {
        api::outgoing_record r;
        r.value = std::move(v);
        return r;
    }
    static api::outgoing_record keyed(std::string k, std::string v) {
        api::outgoing_record r;
        r.key = std::move(k);
        r.value = std::move(v);
        return r;
    }
    static api::outgoing_record to_partition(std::int32_t p, std::string v) {
        api::outgoing_record r;
        r.partition = p;
        r.value = std::move(v);
        return r;
    }
};
TYPED_TEST_SUITE(ClientProducerContract, client_factories, producer_suite_names);

TYPED_TEST(ClientProducerContract, OffsetsAreDenseAndKeepTheCallsOrder) {
    auto t = this->make_topic("dense", 1);
    auto first = this->send(t, {this->value("a"), this->value("b"), this->value("c")});
    ASSERT_TRUE(first) << first.error().text();
    ASSERT_EQ(first->size(), 3u);
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_FALSE((*first)[i].error) << (*first)[i].error.text();
        EXPECT_EQ((*first)[i].partition, 0);
        EXPECT_EQ((*first)[i].offset, static_cast<std::int64_t>(i));
    }
    auto second = this->send(t, {this->value("d"), this->value("e")});
    ASSERT_TRUE(second);
    EXPECT_EQ((*second)[0].offset, 3);
    EXPECT_EQ((*second)[1].offset, 4);
    EXPECT_EQ(this->latest(t, 0), 5);
}

TYPED_TEST(ClientProducerContract, KeysGoWhereTheJavaProducerPutsThem) {
    // compat: Kafka's UtilsTest.testMurmur2 values, toPositive(murmur2(key)) % 6.
    auto t = this->make_topic("keyed", 6);
    const std::vector<std::pair<std::string, std::int32_t>> cases{
        {"abc", 3},                         // murmur2 479470107
        {"a-little-bit-long-string", 2},    // murmur2 -985981536
        {"a-little-bit-longer-string", 5},  // murmur2 -1486304829
        {"foobar", 0},                      // murmur2 -790332482
    };
    std::vector<api::outgoing_record> recs;
    for (const auto& [k, _] : cases) {
        recs.push_back(this->keyed(k, "v"));
    }
    auto sent = this->send(t, std::move(recs));
    ASSERT_TRUE(sent) << sent.error().text();
    for (std::size_t i = 0; i < cases.size(); ++i) {
        EXPECT_FALSE((*sent)[i].error);
        EXPECT_EQ((*sent)[i].partition, cases[i].second) << cases[i].first;
        EXPECT_EQ((*sent)[i].offset, 0) << cases[i].first;
    }
    // The same key again: the same partition, the next offset.
    auto again = this->send(t, {this->keyed("abc", "w")});
    ASSERT_TRUE(again);
    EXPECT_EQ((*again)[0].partition, 3);
    EXPECT_EQ((*again)[0].offset, 1);
    EXPECT_EQ(this->latest(t, 3), 2);
}

TYPED_TEST(ClientProducerContract, ExplicitPartitionsAreKept) {
    auto t = this->make_topic("explicit", 6);
    auto sent = this->send(t, {this->to_partition(4, "x"), this->to_partition(1, "y"),
                               this->to_partition(4, "z")});
    ASSERT_TRUE(sent) << sent.error().text();
    EXPECT_EQ((*sent)[0].partition, 4);
    EXPECT_EQ((*sent)[0].offset, 0);
    EXPECT_EQ((*sent)[1].partition, 1);
    EXPECT_EQ((*sent)[1].offset, 0);
    EXPECT_EQ((*sent)[2].partition, 4);
    EXPECT_EQ((*sent)[2].offset, 1);
    EXPECT_EQ(this->latest(t, 4), 2);
    EXPECT_EQ(this->latest(t, 1), 1);
    EXPECT_EQ(this->latest(t, 0), 0);
}

TYPED_TEST(ClientProducerContract, RecordsWithoutKeyOrPartitionShareOnePartitionPerCall) {
    auto t = this->make_topic("sticky", 4);
    for (int call = 0; call < 3; ++call) {
        auto sent = this->send(t, {this->value("a"), this->value("b"), this->value("c")});
        ASSERT_TRUE(sent) << sent.error().text();
        std::set<std::int32_t> parts;
        for (const auto& d : *sent) {
            EXPECT_FALSE(d.error);
            parts.insert(d.partition);
        }
        EXPECT_EQ(parts.size(), 1u) << "call " << call;
        EXPECT_GE(*parts.begin(), 0);
        EXPECT_LT(*parts.begin(), 4);
    }
}

TYPED_TEST(ClientProducerContract, TimestampsAndHeadersAreStored) {
    auto t = this->make_topic("stamped", 1);
    auto r1 = this->value("one");
    r1.timestamp = 1'000'000;
    r1.headers = {{"h", std::string("v")}, {"null", std::nullopt}};
    auto r2 = this->value("two");
    r2.timestamp = 2'000'000;
    const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    auto r3 = this->value("now");  // no timestamp: the time of the send
    auto sent = this->send(t, {r1, r2, r3});
    ASSERT_TRUE(sent) << sent.error().text();
    if (stand_in_lacks<TypeParam>("produce_timestamps").empty()) {
        EXPECT_EQ((*sent)[0].timestamp, 1'000'000);
        EXPECT_EQ((*sent)[1].timestamp, 2'000'000);
        EXPECT_GE((*sent)[2].timestamp, before);
    }
    if (auto why = stand_in_lacks<TypeParam>("offsets_by_timestamp"); !why.empty()) {
        GTEST_SKIP() << why;
    }
    // The stored timestamps as ListOffsets finds them.
    std::vector<api::offset_query> q{
        {topic_name(t), partition_id(0), {api::offset_spec::kind::timestamp, 1'500'000}}};
    auto found = this->run(this->admin().list_offsets(std::move(q),
                                                      api::isolation::read_uncommitted));
    ASSERT_FALSE(found.at(0).error);
    EXPECT_EQ(found.at(0).off.value, 1);
    EXPECT_EQ(found.at(0).timestamp, 2'000'000);
}

TYPED_TEST(ClientProducerContract, LogAppendTimeTopicsAnswerTheStampedTime) {
    if (auto why = stand_in_lacks<TypeParam>("topic_configs"); !why.empty()) {
        GTEST_SKIP() << why;
    }
    auto t = this->make_topic("appended", 1, {{"message.timestamp.type", "LogAppendTime"}});
    const auto before = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    auto r = this->value("x");
    r.timestamp = 1000;
    auto sent = this->send(t, {r});
    ASSERT_TRUE(sent) << sent.error().text();
    EXPECT_FALSE((*sent)[0].error);
    EXPECT_GE((*sent)[0].timestamp, before);
}

TYPED_TEST(ClientProducerContract, AnUnknownTopicFailsTheCall) {
    auto t = this->unique_topic("missing");
    auto sent = this->send(t, {this->value("x")});
    ASSERT_FALSE(sent);
    EXPECT_EQ(sent.error().reason(), api::errc::unknown_topic_or_partition);
    EXPECT_NE(sent.error().text().find(t), std::string::npos) << sent.error().text();
    auto count = this->run(this->producer().partitions(topic_name(t)));
    ASSERT_FALSE(count);
    EXPECT_EQ(count.error().reason(), api::errc::unknown_topic_or_partition);
}

TYPED_TEST(ClientProducerContract, APartitionTheTopicLacksFailsTheCallSendingNothing) {
    auto t = this->make_topic("two", 2);
    auto sent = this->send(t, {this->to_partition(0, "ok"), this->to_partition(7, "bad")});
    ASSERT_FALSE(sent);
    EXPECT_EQ(sent.error().reason(), api::errc::unknown_topic_or_partition);
    EXPECT_NE(sent.error().text().find('7'), std::string::npos) << sent.error().text();
    EXPECT_EQ(this->latest(t, 0), 0);
    auto count = this->run(this->producer().partitions(topic_name(t)));
    ASSERT_TRUE(count);
    EXPECT_EQ(*count, 2);
}

TYPED_TEST(ClientProducerContract, ARecordOverTheTopicsLimitFailsAlone) {
    if (auto why = stand_in_lacks<TypeParam>("topic_configs"); !why.empty()) {
        GTEST_SKIP() << why;
    }
    auto t = this->make_topic("limited", 1, {{"max.message.bytes", "2000"}});
    auto sent = this->send(t, {this->value("small-1"), this->value(std::string(10'000, 'x')),
                               this->value("small-2")});
    ASSERT_TRUE(sent) << sent.error().text();
    ASSERT_EQ(sent->size(), 3u);
    EXPECT_FALSE((*sent)[0].error) << (*sent)[0].error.text();
    ASSERT_TRUE((*sent)[1].error);
    EXPECT_EQ((*sent)[1].error.reason(), api::errc::message_too_large);
    EXPECT_FALSE((*sent)[2].error) << (*sent)[2].error.text();
    EXPECT_LT((*sent)[0].offset, (*sent)[2].offset);
    EXPECT_EQ(this->latest(t, 0), 2);
}

TYPED_TEST(ClientProducerContract, AcksLeaderAnswersOffsetsToo) {
    auto t = this->make_topic("leader-acks", 1);
    api::send_options opts;
    opts.acks = api::acks::leader;
    std::vector<api::outgoing_record> recs{this->value("a"), this->value("b")};
    auto sent = this->run(this->producer().send(topic_name(t), std::move(recs), opts));
    ASSERT_TRUE(sent);
    EXPECT_EQ((*sent)[1].offset, 1);
}

}  // namespace
}  // namespace sluice::backend::contract
