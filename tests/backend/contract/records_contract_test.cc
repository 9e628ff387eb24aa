// Contract: records (backend/api/records.h). Produce then fetch, dense ordered offsets, fetch
// bounds and errors, timestamps, list offsets, delete records.
#include <algorithm>

#include "protocol/kafka/record_batch_builder.h"
#include "tests/backend/contract/contract_backends.h"

namespace sluice::backend::contract {
namespace {

template <typename F>
class RecordsContract : public BackendContract<F> {};
TYPED_TEST_SUITE(RecordsContract, backend_factories, factory_names);

TYPED_TEST(RecordsContract, ProducedRecordsAreFetchedBackInOrder) {
    this->create_topic("t", 1);
    EXPECT_EQ(this->produce_values("t", 0, {"a", "b", "c"}), 0);
    auto f = this->fetch("t", 0, 0);
    ASSERT_FALSE(f.error) << f.error.text();
    EXPECT_EQ(f.high_watermark.value, 3);
    EXPECT_EQ(f.log_start_offset.value, 0);
    auto recs = decode_fetched(f);
    EXPECT_EQ(values_of(recs), (std::vector<std::string>{"a", "b", "c"}));
}

TYPED_TEST(RecordsContract, OffsetsAreDenseAndOrderedPerPartition) {
    this->create_topic("t", 2);
    EXPECT_EQ(this->produce_values("t", 0, {"a", "b"}), 0);
    EXPECT_EQ(this->produce_values("t", 1, {"x"}), 0);
    EXPECT_EQ(this->produce_values("t", 0, {"c"}), 2);
    EXPECT_EQ(this->produce_values("t", 0, {"d", "e", "f"}), 3);
    EXPECT_EQ(this->produce_values("t", 1, {"y"}), 1);

    auto p0 = decode_fetched(this->fetch("t", 0, 0));
    ASSERT_EQ(p0.size(), 6u);
    for (std::size_t i = 0; i < p0.size(); ++i) {
        EXPECT_EQ(p0[i].offset, static_cast<std::int64_t>(i));
    }
    EXPECT_EQ(values_of(p0), (std::vector<std::string>{"a", "b", "c", "d", "e", "f"}));
    EXPECT_EQ(values_of(decode_fetched(this->fetch("t", 1, 0))),
              (std::vector<std::string>{"x", "y"}));
}

TYPED_TEST(RecordsContract, OneProduceCallAppendsToSeveralPartitions) {
    this->create_topic("t", 2);
    auto b0 = make_batch({"p0"});
    auto b1 = make_batch({"p1a", "p1b"});
    api::produce_request req;
    api::produce_topic t;
    t.topic = topic_name("t");
    t.partitions.push_back({partition_id(1), b1.mutable_view()});
    t.partitions.push_back({partition_id(0), b0.mutable_view()});
    req.topics.push_back(std::move(t));
    auto r = this->run(this->records().produce(std::move(req)));
    ASSERT_EQ(r.topics.size(), 1u);
    ASSERT_EQ(r.topics[0].partitions.size(), 2u);
    // Answered in request order.
    EXPECT_EQ(r.topics[0].partitions[0].partition, partition_id(1));
    EXPECT_EQ(r.topics[0].partitions[1].partition, partition_id(0));
    EXPECT_FALSE(r.topics[0].partitions[0].error);
    EXPECT_FALSE(r.topics[0].partitions[1].error);
    EXPECT_EQ(this->latest("t", 0), 1);
    EXPECT_EQ(this->latest("t", 1), 2);
}

TYPED_TEST(RecordsContract, FetchFromTheMiddleStartsAtThatRecord) {
    this->create_topic("t", 1);
    for (int i = 0; i < 5; ++i) {
        this->produce_values("t", 0, {"v" + std::to_string(i)});
    }
    auto recs = decode_fetched(this->fetch("t", 0, 3));
    ASSERT_FALSE(recs.empty());
    // Whole batches come back: the first record returned is the one asked for.
    EXPECT_EQ(recs.front().offset, 3);
    EXPECT_EQ(values_of(recs), (std::vector<std::string>{"v3", "v4"}));
}

TYPED_TEST(RecordsContract, FetchInsideABatchReturnsThatBatch) {
    this->create_topic("t", 1);
    this->produce_values("t", 0, {"a", "b", "c", "d"});
    auto recs = decode_fetched(this->fetch("t", 0, 2));
    // Kafka returns the whole batch holding the offset; the client skips earlier records.
    std::vector<std::int64_t> offsets;
    for (const auto& r : recs) {
        offsets.push_back(r.offset);
    }
    EXPECT_NE(std::find(offsets.begin(), offsets.end(), 2), offsets.end());
    EXPECT_NE(std::find(offsets.begin(), offsets.end(), 3), offsets.end());
}

TYPED_TEST(RecordsContract, FetchAtTheEndIsEmptyWithoutError) {
    this->create_topic("t", 1);
    this->produce_values("t", 0, {"a", "b"});
    auto f = this->fetch("t", 0, 2);
    EXPECT_FALSE(f.error) << f.error.text();
    EXPECT_EQ(f.records.size(), 0u);
    EXPECT_EQ(f.high_watermark.value, 2);
}

TYPED_TEST(RecordsContract, FetchBeyondTheEndIsOffsetOutOfRange) {
    this->create_topic("t", 1);
    this->produce_values("t", 0, {"a", "b"});
    auto f = this->fetch("t", 0, 3);
    EXPECT_EQ(reason_of(f.error), api::errc::offset_out_of_range);
    EXPECT_EQ(f.records.size(), 0u);
    auto neg = this->fetch("t", 0, -1);
    EXPECT_EQ(reason_of(neg.error), api::errc::offset_out_of_range);
}

TYPED_TEST(RecordsContract, FetchWaitsForDataUntilMaxWait) {
    this->create_topic("t", 1);
    api::fetch_request req;
    api::fetch_topic t;
    t.topic = topic_name("t");
    t.partitions.push_back({partition_id(0), offset(0), 1048576});
    req.topics.push_back(std::move(t));
    req.min_bytes = 1;
    req.max_wait = std::chrono::milliseconds(10000);
    auto parked = this->spawn(this->records().fetch(std::move(req)));
    // The fetch parks: nothing to return yet.
    this->run_until([&] { return this->records().parked_fetches() > 0 || parked->has_value(); });
    EXPECT_FALSE(parked->has_value());
    // A produce wakes it long before max_wait.
    const auto before = std::chrono::steady_clock::now();
    this->produce_values("t", 0, {"late"});
    ASSERT_TRUE(this->run_until([&] { return parked->has_value(); }));
    EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(5));
    auto& part = (**parked).topics.at(0).partitions.at(0);
    EXPECT_EQ(values_of(decode_fetched(part)), (std::vector<std::string>{"late"}));
}

TYPED_TEST(RecordsContract, PartitionByteBoundIsHonouredButOneBatchAlwaysComes) {
    this->create_topic("t", 1);
    for (int i = 0; i < 4; ++i) {
        auto b = make_sized_batch(1, 1000);
        ASSERT_FALSE(this->produce("t", 0, b).error);
    }
    // About 1.1 kB per batch: 2500 bytes hold two batches, never all four.
    auto two = this->fetch("t", 0, 0, 2500);
    EXPECT_GE(count_batches(two), 1u);
    EXPECT_LE(count_batches(two), 2u);
    EXPECT_LE(two.records.size(), 2500u);
    // A bound smaller than the first batch still returns that batch.
    auto one = this->fetch("t", 0, 0, 1);
    EXPECT_EQ(count_batches(one), 1u);
    EXPECT_EQ(decode_fetched(one).front().offset, 0);
}

TYPED_TEST(RecordsContract, ResponseByteBoundIsHonoured) {
    this->create_topic("t", 2);
    for (int p = 0; p < 2; ++p) {
        for (int i = 0; i < 3; ++i) {
            auto b = make_sized_batch(1, 1000);
            ASSERT_FALSE(this->produce("t", p, b).error);
        }
    }
    api::fetch_request req;
    api::fetch_topic t;
    t.topic = topic_name("t");
    t.partitions.push_back({partition_id(0), offset(0), 1048576});
    t.partitions.push_back({partition_id(1), offset(0), 1048576});
    req.topics.push_back(std::move(t));
    req.min_bytes = 0;
    req.max_bytes = 1500;
    auto r = this->run(this->records().fetch(std::move(req)));
    ASSERT_EQ(r.topics.at(0).partitions.size(), 2u);
    std::size_t total = 0;
    std::size_t batches = 0;
    for (const auto& p : r.topics[0].partitions) {
        EXPECT_FALSE(p.error);
        total += p.records.size();
        batches += count_batches(p);
    }
    // The first batch is returned whole; nothing more fits.
    EXPECT_EQ(batches, 1u);
    EXPECT_LE(total, 1500u);
}

TYPED_TEST(RecordsContract, CreateTimestampsAreKept) {
    this->create_topic("t", 1);
    this->produce_values("t", 0, {"a"}, 1'600'000'000'123);
    auto recs = decode_fetched(this->fetch("t", 0, 0));
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(recs[0].timestamp, 1'600'000'000'123);
    EXPECT_FALSE(recs[0].log_append_time);
}

TYPED_TEST(RecordsContract, LogAppendTimeTopicsStampTheAppendTime) {
    this->create_topic("t", 1, {{"message.timestamp.type", "LogAppendTime"}});
    const std::int64_t before = now_ms();
    auto b = make_batch({"a", "b"}, 1'000);
    auto r = this->produce("t", 0, b);
    ASSERT_FALSE(r.error);
    EXPECT_GE(r.log_append_time_ms, before);
    auto recs = decode_fetched(this->fetch("t", 0, 0));
    ASSERT_EQ(recs.size(), 2u);
    for (const auto& rec : recs) {
        EXPECT_TRUE(rec.log_append_time);
        EXPECT_EQ(rec.timestamp, r.log_append_time_ms);
    }
}

TYPED_TEST(RecordsContract, ListOffsetsEarliestAndLatest) {
    this->create_topic("t", 1);
    EXPECT_EQ(this->earliest("t"), 0);
    EXPECT_EQ(this->latest("t"), 0);
    this->produce_values("t", 0, {"a", "b", "c"});
    EXPECT_EQ(this->earliest("t"), 0);
    EXPECT_EQ(this->latest("t"), 3);
}

TYPED_TEST(RecordsContract, ListOffsetsByTimestampFindsTheFirstRecordAtOrAfter) {
    this->create_topic("t", 1);
    this->produce_values("t", 0, {"a"}, 1000);
    this->produce_values("t", 0, {"b"}, 2000);
    this->produce_values("t", 0, {"c"}, 3000);
    using kind = api::offset_spec::kind;
    auto at = [&](std::int64_t ts) { return this->list_offset("t", 0, {kind::timestamp, ts}); };
    EXPECT_EQ(at(500).off.value, 0);
    EXPECT_EQ(at(1500).off.value, 1);
    EXPECT_EQ(at(1500).timestamp, 2000);
    EXPECT_EQ(at(2000).off.value, 1);
    EXPECT_EQ(at(3000).off.value, 2);
    // After every record: no such record.
    auto none = at(3001);
    EXPECT_FALSE(none.error);
    EXPECT_EQ(none.off.value, -1);

    auto max = this->list_offset("t", 0, {kind::max_timestamp, -1});
    EXPECT_EQ(max.off.value, 2);
    EXPECT_EQ(max.timestamp, 3000);
}

TYPED_TEST(RecordsContract, ListOffsetsByTimestampInsideABatchFindsTheRecord) {
    this->create_topic("t", 1);
    protocol::kafka::batch_options o;
    protocol::kafka::record_batch_builder b(o);
    const std::string v = "v";
    b.add(std::nullopt, protocol::as_bytes(v), 1000);
    b.add(std::nullopt, protocol::as_bytes(v), 2000);
    b.add(std::nullopt, protocol::as_bytes(v), 3000);
    auto batch = b.finish();
    ASSERT_TRUE(batch);
    ASSERT_FALSE(this->produce("t", 0, *batch).error);
    auto found = this->list_offset("t", 0, {api::offset_spec::kind::timestamp, 1500});
    EXPECT_EQ(found.off.value, 1);
    EXPECT_EQ(found.timestamp, 2000);
}

TYPED_TEST(RecordsContract, DeleteRecordsMovesTheLogStart) {
    this->create_topic("t", 1);
    this->produce_values("t", 0, {"a", "b", "c", "d"});
    std::vector<api::delete_records_request> reqs;
    reqs.push_back({topic_name("t"), partition_id(0), offset(2)});
    auto r = this->run(this->records().delete_records(std::move(reqs)));
    ASSERT_EQ(r.size(), 1u);
    ASSERT_TRUE(r[0]) << r[0].error().text();
    EXPECT_EQ(r[0]->value, 2);

    EXPECT_EQ(this->earliest("t"), 2);
    auto below = this->fetch("t", 0, 1);
    EXPECT_EQ(reason_of(below.error), api::errc::offset_out_of_range);
    auto from = this->fetch("t", 0, 2);
    EXPECT_FALSE(from.error);
    EXPECT_EQ(from.log_start_offset.value, 2);
    auto recs = decode_fetched(from);
    ASSERT_FALSE(recs.empty());
    // Records before the log start may come back in the first batch; the client skips them.
    std::vector<std::string> visible;
    for (const auto& rec : recs) {
        if (rec.offset >= 2) {
            visible.push_back(*rec.value);
        }
    }
    EXPECT_EQ(visible, (std::vector<std::string>{"c", "d"}));
}

TYPED_TEST(RecordsContract, DeleteRecordsToTheHighWatermarkAndBeyond) {
    this->create_topic("t", 1);
    this->produce_values("t", 0, {"a", "b", "c"});
    std::vector<api::delete_records_request> reqs;
    reqs.push_back({topic_name("t"), partition_id(0), offset(7)});
    reqs.push_back({topic_name("t"), partition_id(0), offset(-1)});
    auto r = this->run(this->records().delete_records(std::move(reqs)));
    ASSERT_EQ(r.size(), 2u);
    ASSERT_FALSE(r[0]);
    EXPECT_EQ(api::reason(r[0].error()), api::errc::offset_out_of_range);
    ASSERT_TRUE(r[1]);
    EXPECT_EQ(r[1]->value, 3);
    EXPECT_EQ(this->earliest("t"), 3);
    EXPECT_EQ(this->latest("t"), 3);
    // New records continue the offsets.
    EXPECT_EQ(this->produce_values("t", 0, {"d"}), 3);
}

TYPED_TEST(RecordsContract, RecordsSurviveReopening) {
    this->create_topic("t", 1);
    this->produce_values("t", 0, {"a", "b"});
    this->reopen();
    EXPECT_EQ(values_of(decode_fetched(this->fetch("t", 0, 0))),
              (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(this->produce_values("t", 0, {"c"}), 2);
}

TYPED_TEST(RecordsContract, ProduceToUnknownTopicOrPartitionFails) {
    this->create_topic("t", 1);
    auto b = make_batch({"a"});
    EXPECT_EQ(reason_of(this->produce("nope", 0, b).error), api::errc::unknown_topic_or_partition);
    auto b2 = make_batch({"a"});
    EXPECT_EQ(reason_of(this->produce("t", 1, b2).error), api::errc::unknown_topic_or_partition);
    EXPECT_EQ(this->latest("t"), 0);
}

TYPED_TEST(RecordsContract, FetchOfUnknownTopicFails) {
    auto byname = this->fetch("nope", 0, 0);
    EXPECT_EQ(reason_of(byname.error), api::errc::unknown_topic_or_partition);

    api::fetch_request req;
    api::fetch_topic t;
    t.id = uuid::random();
    t.partitions.push_back({partition_id(0), offset(0), 1048576});
    req.topics.push_back(std::move(t));
    req.min_bytes = 0;
    auto r = this->run(this->records().fetch(std::move(req)));
    ASSERT_EQ(r.topics.size(), 1u);
    EXPECT_EQ(reason_of(r.topics[0].partitions.at(0).error), api::errc::unknown_topic_id);
}

TYPED_TEST(RecordsContract, FetchByTopicIdNamesTheTopic) {
    this->create_topic("t", 1);
    this->produce_values("t", 0, {"a"});
    auto d = this->run(this->topics().describe(topic_name("t")));
    api::fetch_request req;
    api::fetch_topic t;
    t.id = d->id;
    t.partitions.push_back({partition_id(0), offset(0), 1048576});
    req.topics.push_back(std::move(t));
    req.min_bytes = 0;
    auto r = this->run(this->records().fetch(std::move(req)));
    ASSERT_EQ(r.topics.size(), 1u);
    EXPECT_EQ(r.topics[0].topic, topic_name("t"));
    EXPECT_EQ(values_of(decode_fetched(r.topics[0].partitions.at(0))),
              (std::vector<std::string>{"a"}));
}

TYPED_TEST(RecordsContract, CorruptBatchIsRefused) {
    this->create_topic("t", 1);
    auto b = make_batch({"a", "b"});
    // Flip a byte of the last record's value: the CRC no longer matches.
    b.data()[b.size() - 2] ^= std::byte{0x5a};
    EXPECT_EQ(reason_of(this->produce("t", 0, b).error), api::errc::corrupt_message);
    EXPECT_EQ(this->latest("t"), 0);
}

TYPED_TEST(RecordsContract, BatchAboveMaxMessageBytesIsRefused) {
    this->create_topic("t", 1, {{"max.message.bytes", "1024"}});
    auto big = make_sized_batch(1, 4000);
    EXPECT_EQ(reason_of(this->produce("t", 0, big).error), api::errc::message_too_large);
    EXPECT_EQ(this->latest("t"), 0);
    auto small = make_sized_batch(1, 100);
    EXPECT_FALSE(this->produce("t", 0, small).error);
}

TYPED_TEST(RecordsContract, ListOffsetsOfUnknownTopicFails) {
    auto r = this->list_offset("nope", 0, {api::offset_spec::kind::latest, -1});
    EXPECT_EQ(reason_of(r.error), api::errc::unknown_topic_or_partition);
}

}  // namespace
}  // namespace sluice::backend::contract
