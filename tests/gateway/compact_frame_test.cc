#include "gateway/http/ws/compact_frame.h"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "gateway/http/json.h"
#include "gateway/http/stream_format.h"
#include "protocol/kafka/record_batch_builder.h"

namespace sluice::gateway::ws {
namespace {

using protocol::as_bytes;
using protocol::kafka::header_view;
using protocol::kafka::record_view;

using header_list = std::vector<std::pair<std::string, std::optional<std::string>>>;

struct sample {
    sample(std::optional<std::string> k, std::optional<std::string> v, std::int64_t o,
           std::int64_t ts, header_list h = {})
        : key(std::move(k)), value(std::move(v)), offset(o), timestamp(ts), headers(std::move(h)) {}

    std::optional<std::string> key;
    std::optional<std::string> value;
    std::int64_t offset = 0;
    std::int64_t timestamp = 0;
    header_list headers;
};

/// Record views of samples, decoded from real batches this object keeps alive.
class record_maker {
public:
    std::vector<record_view> of(const std::vector<sample>& samples) {
        protocol::kafka::record_batch_builder b;
        for (const auto& s : samples) {
            std::vector<header_view> headers;
            for (const auto& [name, value] : s.headers) {
                headers.push_back({name, value ? std::optional(as_bytes(*value)) : std::nullopt});
            }
            auto bytes = [](const std::optional<std::string>& v) {
                return v ? std::optional(as_bytes(*v)) : std::nullopt;
            };
            b.add(bytes(s.key), bytes(s.value), s.timestamp, headers);
        }
        auto batch = b.finish();
        EXPECT_TRUE(batch.has_value());
        batches_.push_back(std::move(*batch));
        auto it = protocol::kafka::record_iterator::open(batches_.back().view(), 1 << 20);
        EXPECT_TRUE(it.has_value());
        std::vector<record_view> out;
        record_view r;
        while (it->next(r)) {
            r.offset = samples[out.size()].offset;
            r.timestamp = samples[out.size()].timestamp;
            out.push_back(r);
        }
        EXPECT_EQ(out.size(), samples.size());
        return out;
    }

private:
    std::deque<protocol::byte_buffer> batches_;
};

struct placed {
    topic_name topic;
    partition_id partition;
    record_view record;
};

std::vector<placed> on(const std::string& topic, std::int32_t partition,
                       const std::vector<record_view>& records) {
    std::vector<placed> out;
    for (const auto& r : records) {
        out.push_back({topic_name(topic), partition_id(partition), r});
    }
    return out;
}

std::string compact_of(const std::vector<placed>& records, stream_format format,
                       std::string_view id = "") {
    compact_frame f;
    f.start(id);
    for (const auto& p : records) {
        f.add(p.topic, p.partition, p.record, format);
    }
    return std::string(f.finish());
}

/// The default frame of the same records, as the session writes it.
std::string default_of(const std::vector<placed>& records, stream_format format) {
    json::writer w;
    w.start_object();
    w.field("op", "records");
    w.key("records");
    w.start_array();
    for (const auto& p : records) {
        write_stream_record(w, p.topic, p.partition, p.record, format);
    }
    w.end_array();
    w.end_object();
    return w.str();
}

/// A decoder as a client writes one: the default frame rebuilt from a compact one.
std::string rebuilt_from(const std::string& compact) {
    json::document doc;
    EXPECT_FALSE(json::parse(compact, doc).has_value());
    json::writer w;
    w.start_object();
    w.field("op", "records");
    w.key("records");
    w.start_array();
    for (const auto& run : doc["runs"].GetArray()) {
        std::int64_t offset = run["base_offset"].GetInt64();
        std::int64_t timestamp = run["base_timestamp"].GetInt64();
        const auto& values = run["values"];
        const auto* offsets = json::member(run, "offsets");
        const auto* keys = json::member(run, "keys");
        const auto* headers = json::member(run, "headers");
        for (rapidjson::SizeType i = 0; i < values.Size(); ++i) {
            offset = offsets ? offset + (*offsets)[i].GetInt64() : offset + (i > 0 ? 1 : 0);
            timestamp += run["timestamps"][i].GetInt64();
            w.start_object();
            w.field("topic", json::as_view(run["topic"]));
            w.field("partition", run["partition"].GetInt64());
            w.field("offset", offset);
            w.field("timestamp", timestamp);
            w.key("key");
            if (keys) {
                w.value((*keys)[i]);
            } else {
                w.null();
            }
            w.key("value");
            w.value(values[i]);
            w.key("headers");
            if (headers) {
                w.value((*headers)[i]);
            } else {
                w.start_object();
                w.end_object();
            }
            w.end_object();
        }
    }
    w.end_array();
    w.end_object();
    return w.str();
}

void expect_same_json(const std::string& a, const std::string& b) {
    json::document da;
    json::document db;
    ASSERT_FALSE(json::parse(a, da).has_value()) << a;
    ASSERT_FALSE(json::parse(b, db).has_value()) << b;
    EXPECT_TRUE(da == db) << a << "\n" << b;
}

TEST(CompactFrame, ConsecutiveOffsetsNeedNoOffsetsArray) {
    record_maker m;
    auto recs = on("t", 0, m.of({{std::nullopt, "a", 40, 1000}, {std::nullopt, "b", 41, 1000},
                                 {std::nullopt, "c", 42, 1003}}));
    EXPECT_EQ(compact_of(recs, stream_format::string),
              R"({"op":"records","encoding":"compact","runs":[{"topic":"t","partition":0,)"
              R"("base_offset":40,"base_timestamp":1000,"values":["a","b","c"],)"
              R"("timestamps":[0,0,3]}]})");
}

TEST(CompactFrame, GappedOffsetsAreDeltasFromThePreviousRecord) {
    record_maker m;
    auto recs = on("t", 2, m.of({{std::nullopt, "a", 10, 5}, {std::nullopt, "b", 11, 5},
                                 {std::nullopt, "c", 12, 5}, {std::nullopt, "d", 15, 5},
                                 {std::nullopt, "e", 16, 4}}));
    EXPECT_EQ(compact_of(recs, stream_format::string),
              R"({"op":"records","encoding":"compact","runs":[{"topic":"t","partition":2,)"
              R"("base_offset":10,"base_timestamp":5,"values":["a","b","c","d","e"],)"
              R"("timestamps":[0,0,0,0,-1],"offsets":[0,1,1,3,1]}]})");
}

TEST(CompactFrame, AGapAtTheSecondRecord) {
    record_maker m;
    auto recs = on("t", 0, m.of({{std::nullopt, "a", 3, 5}, {std::nullopt, "b", 7, 9}}));
    EXPECT_EQ(compact_of(recs, stream_format::string),
              R"({"op":"records","encoding":"compact","runs":[{"topic":"t","partition":0,)"
              R"("base_offset":3,"base_timestamp":5,"values":["a","b"],"timestamps":[0,4],)"
              R"("offsets":[0,4]}]})");
}

TEST(CompactFrame, KeysOnlyWhenSomeRecordHasOne) {
    record_maker m;
    auto keyed = on("t", 0, m.of({{std::nullopt, "a", 0, 1}, {"k1", "b", 1, 1},
                                  {std::nullopt, "c", 2, 1}, {"", std::nullopt, 3, 1}}));
    EXPECT_EQ(compact_of(keyed, stream_format::string),
              R"({"op":"records","encoding":"compact","runs":[{"topic":"t","partition":0,)"
              R"("base_offset":0,"base_timestamp":1,"values":["a","b","c",null],)"
              R"("timestamps":[0,0,0,0],"keys":[null,"k1",null,""]}]})");
    auto unkeyed = on("t", 0, m.of({{std::nullopt, std::nullopt, 0, 1}}));
    EXPECT_EQ(compact_of(unkeyed, stream_format::string),
              R"({"op":"records","encoding":"compact","runs":[{"topic":"t","partition":0,)"
              R"("base_offset":0,"base_timestamp":1,"values":[null],"timestamps":[0]}]})");
}

TEST(CompactFrame, HeadersOnlyWhenSomeRecordHasThem) {
    record_maker m;
    auto recs = on("t", 0,
                   m.of({{std::nullopt, "a", 0, 1},
                         {std::nullopt, "b", 1, 1, {{"trace", "t-1"}, {"n", std::nullopt}}},
                         {std::nullopt, "c", 2, 1}}));
    EXPECT_EQ(compact_of(recs, stream_format::string),
              R"({"op":"records","encoding":"compact","runs":[{"topic":"t","partition":0,)"
              R"("base_offset":0,"base_timestamp":1,"values":["a","b","c"],)"
              R"("timestamps":[0,0,0],"headers":[{},{"trace":"t-1","n":null},{}]}]})");
}

TEST(CompactFrame, OneRunPerStretchOfATopicPartition) {
    record_maker m;
    auto a = m.of({{std::nullopt, "a0", 0, 1}, {std::nullopt, "a1", 1, 1}});
    auto b = m.of({{std::nullopt, "b0", 0, 2}});
    auto c = m.of({{"k", "c0", 7, 3}});
    auto d = m.of({{std::nullopt, "a2", 2, 4}});
    std::vector<placed> recs = on("t", 0, a);
    for (const auto& more : {on("t", 1, b), on("u", 0, c), on("t", 0, d)}) {
        recs.insert(recs.end(), more.begin(), more.end());
    }
    EXPECT_EQ(compact_of(recs, stream_format::string, R"("sub")"),
              R"({"op":"records","id":"sub","encoding":"compact","runs":[)"
              R"({"topic":"t","partition":0,"base_offset":0,"base_timestamp":1,)"
              R"("values":["a0","a1"],"timestamps":[0,0]},)"
              R"({"topic":"t","partition":1,"base_offset":0,"base_timestamp":2,)"
              R"("values":["b0"],"timestamps":[0]},)"
              R"({"topic":"u","partition":0,"base_offset":7,"base_timestamp":3,)"
              R"("values":["c0"],"timestamps":[0],"keys":["k"]},)"
              R"({"topic":"t","partition":0,"base_offset":2,"base_timestamp":4,)"
              R"("values":["a2"],"timestamps":[0]}]})");
    expect_same_json(rebuilt_from(compact_of(recs, stream_format::string)),
                     default_of(recs, stream_format::string));
}

std::vector<placed> mixed_records(record_maker& m) {
    auto a = m.of({{std::nullopt, R"({"x":1})", 100, 1700000000000},
                   {"k\xff", "not json \xc3\x28", 101, 1699999999000, {{"h", R"({"y":2})"}}},
                   {"", "", 105, 1700000000500, {{"h", std::nullopt}, {"h2", "v"}}},
                   {R"([1,2])", std::nullopt, 106, 1700000000500},
                   {"q\"uote", "12", 110, 1700000000501}});
    auto b = m.of({{std::nullopt, "true", 0, 5}, {std::nullopt, "line\nbreak", 3, 5}});
    auto out = on("orders", 3, a);
    auto more = on("other \"topic\"", 0, b);
    out.insert(out.end(), more.begin(), more.end());
    return out;
}

TEST(CompactFrame, RebuildsTheDefaultFrameInEachFormat) {
    record_maker m;
    const auto recs = mixed_records(m);
    for (auto format : {stream_format::string, stream_format::base64, stream_format::json}) {
        SCOPED_TRACE(static_cast<int>(format));
        const std::string compact = compact_of(recs, format);
        expect_same_json(rebuilt_from(compact), default_of(recs, format));
        EXPECT_TRUE(json::valid_utf8(compact));
    }
}

TEST(CompactFrame, WritesValuesInTheSubscriptionsFormat) {
    record_maker m;
    auto recs = on("t", 0, m.of({{R"({"k":1})", R"({"x":[1,2]})", 0, 1, {{"h", R"({"y":2})"}}},
                                 {std::nullopt, "plain", 1, 1}}));
    EXPECT_EQ(compact_of(recs, stream_format::json),
              R"({"op":"records","encoding":"compact","runs":[{"topic":"t","partition":0,)"
              R"("base_offset":0,"base_timestamp":1,"values":[{"x":[1,2]},"plain"],)"
              R"("timestamps":[0,0],"keys":[{"k":1},null],)"
              R"("headers":[{"h":"{\"y\":2}"},{}]}]})");
    EXPECT_EQ(compact_of(recs, stream_format::base64),
              R"({"op":"records","encoding":"compact","runs":[{"topic":"t","partition":0,)"
              R"("base_offset":0,"base_timestamp":1,"values":["eyJ4IjpbMSwyXX0=","cGxhaW4="],)"
              R"("timestamps":[0,0],"keys":["eyJrIjoxfQ==",null],)"
              R"("headers":[{"h":"eyJ5IjoyfQ=="},{}]}]})");
}

TEST(CompactFrame, StartBeginsAFreshFrame) {
    record_maker m;
    auto recs = on("t", 0, m.of({{"k", "a", 0, 1, {{"h", "v"}}}, {std::nullopt, "b", 5, 1}}));
    auto plain = on("t", 0, m.of({{std::nullopt, "c", 9, 2}}));
    compact_frame f;
    f.start("1");
    for (const auto& p : recs) {
        f.add(p.topic, p.partition, p.record, stream_format::string);
    }
    EXPECT_EQ(f.records(), 2);
    f.finish();
    f.start("");
    EXPECT_EQ(f.records(), 0);
    f.add(plain[0].topic, plain[0].partition, plain[0].record, stream_format::string);
    EXPECT_EQ(f.finish(),
              R"({"op":"records","encoding":"compact","runs":[{"topic":"t","partition":0,)"
              R"("base_offset":9,"base_timestamp":2,"values":["c"],"timestamps":[0]}]})");
}

TEST(CompactFrame, SizeCountsTheOpenRunsColumns) {
    record_maker m;
    auto recs = on("t", 0, m.of({{"key-0", "a", 0, 1, {{"h", "value"}}},
                                 {"key-1", "b", 4, 2, {{"h", "value"}}}}));
    compact_frame f;
    f.start("");
    const std::size_t empty = f.size();
    f.add(recs[0].topic, recs[0].partition, recs[0].record, stream_format::string);
    const std::size_t one = f.size();
    f.add(recs[1].topic, recs[1].partition, recs[1].record, stream_format::string);
    const std::size_t two = f.size();
    EXPECT_LT(empty, one);
    // The second record's key, header and offset delta are in columns not yet in the frame.
    EXPECT_GE(two - one, std::string(R"("b",1,"key-1",{"h":"value"},4)").size());
    EXPECT_GE(two, f.finish().size());
}

TEST(CompactFrame, ParsesEncodingNames) {
    EXPECT_EQ(parse_frame_encoding("records"), frame_encoding::records);
    EXPECT_EQ(parse_frame_encoding("compact"), frame_encoding::compact);
    EXPECT_EQ(parse_frame_encoding("Compact"), std::nullopt);
    EXPECT_EQ(parse_frame_encoding(""), std::nullopt);
    EXPECT_EQ(parse_frame_encoding("binary"), std::nullopt);
}

}  // namespace
}  // namespace sluice::gateway::ws
