// The REST Proxy's routes (gateway/http/rest: v2 produce, v2 metadata, v3) over the fake
// backend: a request in, the status and JSON out, and what the backend was asked.
#include <gtest/gtest.h>

#include <string>

#include "gateway/http/http_settings.h"
#include "gateway/http/record_producer.h"
#include "gateway/http/rest/rest_routes.h"

#include "tests/gateway/fake_backend.h"
#include "tests/gateway/fake_client.h"
#include "tests/gateway/front_support.h"

namespace sluice::gateway {
namespace {
using boost::beast::http::verb;
using testing::fake_call;
namespace api = backend::api;

constexpr const char* binary = "application/vnd.kafka.binary.v2+json";
constexpr const char* json_embedded = "application/vnd.kafka.json.v2+json";

class RestFront : public ::testing::Test {
protected:
    explicit RestFront(topic_auto_creation creation = {})
        : producer(*client_level, api::acks::all, creation),
          rc{settings, "cluster-1", 0, producer, {},
             client_level.get()} {
        fake.add_topic("orders", 3);
        fake.add_topic("__consumer_offsets", 1, true);
        fake.add_topic("_sluice_rest_consumers", 1);
        rest::add_v2_produce_routes(routes, rc);
        rest::add_v2_metadata_routes(routes, rc);
        rest::add_v3_routes(routes, rc);
    }

    http_response call(verb method, std::string target, std::string body = {},
                       std::string content_type = {}) {
        return testing::dispatch(routes, testing::make_request(method, std::move(target),
                                                               std::move(body),
                                                               std::move(content_type)));
    }
    http_response produce(std::string target, std::string body, std::string type = binary) {
        return call(verb::post, std::move(target), std::move(body), std::move(type));
    }

    testing::fake_backend fake;
    std::unique_ptr<backend::api::client> client_level = testing::client_over(fake);
    http_settings settings;
    record_producer producer;
    rest::rest_context rc;
    router routes;
};

// --- v2 produce --------------------------------------------------------------------------------

TEST_F(RestFront, V2ProduceForwardsPartitionKeyValueAndHeaders) {
    // key "key", value "val", header h = "hi" (base64 in the binary format).
    auto res = produce("/topics/orders",
                       R"({"records":[{"key":"a2V5","value":"dmFs","partition":1,)"
                       R"("headers":[{"name":"h","value":"aGk="}]}]})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    ASSERT_EQ(doc["offsets"].Size(), 1u);
    EXPECT_EQ(doc["offsets"][0]["partition"].GetInt(), 1);
    EXPECT_EQ(doc["offsets"][0]["offset"].GetInt64(), 0);
    EXPECT_TRUE(doc["offsets"][0]["error_code"].IsNull());

    const auto& got = fake.state().produced;
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].topic.value, "orders");
    EXPECT_EQ(got[0].partition.value, 1);
    EXPECT_EQ(got[0].key, "key");
    EXPECT_EQ(got[0].value, "val");
    ASSERT_EQ(got[0].headers.size(), 1u);
    EXPECT_EQ(got[0].headers[0].first, "h");
    EXPECT_EQ(got[0].headers[0].second, "hi");
    EXPECT_EQ(fake.script().args_of(fake_call::produce),
              std::vector<std::string>{"orders p1"});
}

TEST_F(RestFront, V2ProduceJsonFormatStoresTheValuesJsonText) {
    auto res = produce("/topics/orders", R"({"records":[{"value":{"a":[1,2]},"partition":0}]})",
                       json_embedded);
    ASSERT_EQ(res.result_int(), 200) << res.body();
    ASSERT_EQ(fake.state().produced.size(), 1u);
    EXPECT_EQ(fake.state().produced[0].value, R"({"a":[1,2]})");
    EXPECT_FALSE(fake.state().produced[0].key.has_value());
}

TEST_F(RestFront, V2ProduceKeyedRecordsGoWhereKafkasPartitionerPutsThem) {
    auto res = produce("/topics/orders", R"({"records":[{"key":"dXNlci00Mg==","value":"eA=="}]})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    ASSERT_EQ(fake.state().produced.size(), 1u);
    EXPECT_EQ(fake.state().produced[0].partition.value,
              backend::client::partition_for_key("user-42", 3));
}

TEST_F(RestFront, V2ProduceToThePartitionOfThePath) {
    auto res = produce("/topics/orders/partitions/2", R"({"records":[{"value":"eA=="}]})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    EXPECT_EQ(testing::parse_json(res.body())["offsets"][0]["partition"].GetInt(), 2);
    EXPECT_EQ(fake.state().produced.at(0).partition.value, 2);
}

TEST_F(RestFront, V2ProduceToAMissingTopicIs40401WithoutAppending) {
    auto res = produce("/topics/nope", R"({"records":[{"value":"eA=="}]})");
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40401);
    EXPECT_EQ(fake.script().count(fake_call::produce), 0u);
    EXPECT_EQ(fake.script().count(fake_call::create_topic), 0u);
}

TEST_F(RestFront, V2ProduceToAPartitionTheTopicLacksIs40402) {
    auto res = produce("/topics/orders/partitions/3", R"({"records":[{"value":"eA=="}]})");
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40402);
    res = produce("/topics/orders", R"({"records":[{"value":"eA==","partition":9}]})");
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40402);
    EXPECT_EQ(fake.script().count(fake_call::produce), 0u);
}

TEST_F(RestFront, V2ProduceStorageErrorIs507WithEachRecordsError) {
    fake.script().fail_next(fake_call::produce, api::errc::storage_error, "disk full");
    auto res = produce("/topics/orders", R"({"records":[{"value":"eA=="},{"value":"eQ=="}]})");
    EXPECT_EQ(res.result_int(), 507);
    auto doc = testing::parse_json(res.body());
    ASSERT_EQ(doc["offsets"].Size(), 2u);
    for (const auto& o : doc["offsets"].GetArray()) {
        EXPECT_EQ(o["error_code"].GetInt(), 50701);
        EXPECT_TRUE(o["offset"].IsNull());
    }
}

TEST_F(RestFront, V2ProduceRetriableErrorIs200With50003) {
    fake.script().fail_next(fake_call::produce, api::errc::not_leader);
    auto res = produce("/topics/orders", R"({"records":[{"value":"eA=="}]})");
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(testing::parse_json(res.body())["offsets"][0]["error_code"].GetInt(), 50003);
    fake.script().fail_next(fake_call::produce, api::errc::message_too_large);
    res = produce("/topics/orders", R"({"records":[{"value":"eA=="}]})");
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_EQ(testing::parse_json(res.body())["offsets"][0]["error_code"].GetInt(), 50002);
}

TEST_F(RestFront, V2ProduceToAnInternalTopicIsRefusedPerRecord) {
    auto res = produce("/topics/__consumer_offsets", R"({"records":[{"value":"eA=="}]})");
    EXPECT_EQ(res.result_int(), 200) << res.body();
    EXPECT_EQ(testing::parse_json(res.body())["offsets"][0]["error_code"].GetInt(), 50002);
    EXPECT_TRUE(fake.state().produced.empty());
}

TEST_F(RestFront, V2ProduceValidatesTheBodyBeforeTheBackend) {
    EXPECT_EQ(produce("/topics/orders", R"({"records":[]})").result_int(), 422);
    EXPECT_EQ(produce("/topics/orders", R"({"records":[{"value":"eA=="}]})", "text/plain")
                  .result_int(),
              415);
    EXPECT_EQ(produce("/topics/orders", "{nope").result_int(), 400);
    auto res = produce("/topics/orders", R"({"records":[{"value":"!!not base64"}]})");
    EXPECT_EQ(res.result_int() / 100, 4u) << res.body();
    EXPECT_EQ(fake.script().count(fake_call::produce), 0u);
}

class RestFrontAutoCreate : public RestFront {
protected:
    RestFrontAutoCreate() : RestFront(topic_auto_creation{true, 2}) {}
};

TEST_F(RestFrontAutoCreate, V2ProduceCreatesAMissingTopicWithNumPartitions) {
    auto res = produce("/topics/fresh", R"({"records":[{"value":"eA=="}]})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    EXPECT_EQ(fake.script().args_of(fake_call::create_topic),
              std::vector<std::string>{"fresh partitions=2"});
    EXPECT_EQ(fake.state().produced.at(0).topic.value, "fresh");
}

TEST_F(RestFrontAutoCreate, V2ProduceAFailedCreationIsMappedFromTheBackend) {
    fake.script().fail_next(fake_call::create_topic, api::errc::invalid_topic_name, "bad name");
    auto res = produce("/topics/fresh", R"({"records":[{"value":"eA=="}]})");
    EXPECT_EQ(res.result_int(), 400) << res.body();
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40002);
    EXPECT_EQ(fake.script().count(fake_call::produce), 0u);
}

// --- v2 metadata -------------------------------------------------------------------------------

TEST_F(RestFront, V2TopicsHideInternalAndSluiceTopics) {
    auto res = call(verb::get, "/topics");
    ASSERT_EQ(res.result_int(), 200);
    auto doc = testing::parse_json(res.body());
    ASSERT_EQ(doc.Size(), 1u);
    EXPECT_EQ(json::as_view(doc[0]), "orders");
}

TEST_F(RestFront, V2TopicShowsPartitionsAndConfigs) {
    fake.state().topics.at(topic_name("orders")).description.overrides["retention.ms"] = "1000";
    auto res = call(verb::get, "/topics/orders");
    ASSERT_EQ(res.result_int(), 200);
    auto doc = testing::parse_json(res.body());
    EXPECT_EQ(doc["partitions"].Size(), 3u);
    EXPECT_EQ(json::as_view(doc["configs"]["retention.ms"]), "1000");
    EXPECT_EQ(json::as_view(doc["configs"]["cleanup.policy"]), "delete");
    res = call(verb::get, "/topics/nope");
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40401);
}

TEST_F(RestFront, V2PartitionOffsetsAskTheBackendForEarliestAndLatest) {
    ASSERT_EQ(produce("/topics/orders/partitions/1",
                      R"({"records":[{"value":"eA=="},{"value":"eQ=="}]})")
                  .result_int(),
              200);
    fake.state().topics.at(topic_name("orders")).partitions[1].log_start = 1;
    auto res = call(verb::get, "/topics/orders/partitions/1/offsets");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    EXPECT_EQ(doc["beginning_offset"].GetInt64(), 1);
    EXPECT_EQ(doc["end_offset"].GetInt64(), 2);
    const auto& q = fake.state().offset_queries;
    ASSERT_EQ(q.size(), 2u);
    EXPECT_EQ(q[0].partition.value, 1);
    EXPECT_EQ(q[0].spec.what, api::offset_spec::kind::earliest);
    EXPECT_EQ(q[1].spec.what, api::offset_spec::kind::latest);
}

TEST_F(RestFront, V2PartitionOffsetsMapBackendErrors) {
    EXPECT_EQ(call(verb::get, "/topics/orders/partitions/3/offsets").result_int(), 404);
    fake.script().fail_next(fake_call::list_offsets, api::errc::unknown_topic_or_partition);
    auto res = call(verb::get, "/topics/orders/partitions/0/offsets");
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40402);
    fake.script().fail_next(fake_call::list_offsets, api::errc::storage_error);
    res = call(verb::get, "/topics/orders/partitions/0/offsets");
    EXPECT_EQ(res.result_int(), 507);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 50701);
    fake.script().fail_next(fake_call::list_offsets, api::errc::coordinator_loading);
    res = call(verb::get, "/topics/orders/partitions/0/offsets");
    EXPECT_EQ(res.result_int(), 500);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 50003);
}

TEST_F(RestFront, V2PartitionsAndBrokersNameThisNode) {
    auto res = call(verb::get, "/topics/orders/partitions");
    ASSERT_EQ(res.result_int(), 200);
    auto doc = testing::parse_json(res.body());
    ASSERT_EQ(doc.Size(), 3u);
    EXPECT_EQ(doc[2]["partition"].GetInt(), 2);
    EXPECT_EQ(doc[2]["leader"].GetInt(), 0);
    EXPECT_EQ(call(verb::get, "/topics/orders/partitions/2").result_int(), 200);
    EXPECT_EQ(call(verb::get, "/topics/orders/partitions/x").result_int(), 404);
    EXPECT_EQ(testing::parse_json(call(verb::get, "/brokers").body())["brokers"][0].GetInt(), 0);
}

// --- v3 ----------------------------------------------------------------------------------------

TEST_F(RestFront, V3TopicWithLinksFromTheHost) {
    auto res = call(verb::get, "/v3/clusters/cluster-1/topics/orders");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    EXPECT_EQ(json::as_view(doc["kind"]), "KafkaTopic");
    EXPECT_EQ(doc["partitions_count"].GetInt(), 3);
    EXPECT_FALSE(doc["is_internal"].GetBool());
    EXPECT_EQ(json::as_view(doc["metadata"]["self"]),
              "http://localhost:8082/v3/clusters/cluster-1/topics/orders");
}

TEST_F(RestFront, V3UnknownClusterTopicAndPartition) {
    auto res = call(verb::get, "/v3/clusters/other/topics");
    EXPECT_EQ(res.result_int(), 404);
    res = call(verb::get, "/v3/clusters/cluster-1/topics/nope");
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40403);
    res = call(verb::get, "/v3/clusters/cluster-1/topics/orders/partitions/3");
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40403);
}

TEST_F(RestFront, V3TopicListShowsInternalButNotSluiceTopics) {
    auto res = call(verb::get, "/v3/clusters/cluster-1/topics");
    ASSERT_EQ(res.result_int(), 200);
    auto doc = testing::parse_json(res.body());
    ASSERT_EQ(doc["data"].Size(), 2u);
    EXPECT_EQ(json::as_view(doc["data"][0]["topic_name"]), "__consumer_offsets");
    EXPECT_TRUE(doc["data"][0]["is_internal"].GetBool());
    EXPECT_EQ(json::as_view(doc["data"][1]["topic_name"]), "orders");
}

TEST_F(RestFront, V3ProduceForwardsTypedKeyValueAndHeaders) {
    auto res = call(verb::post, "/v3/clusters/cluster-1/topics/orders/records",
                    R"({"partition_id":2,"key":{"type":"STRING","data":"k"},)"
                    R"("value":{"type":"JSON","data":{"x":1}},)"
                    R"("headers":[{"name":"h","value":"dg=="}]})",
                    "application/json");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    EXPECT_EQ(doc["error_code"].GetInt(), 200);
    EXPECT_EQ(doc["partition_id"].GetInt(), 2);
    EXPECT_EQ(doc["offset"].GetInt64(), 0);
    EXPECT_EQ(json::as_view(doc["key"]["type"]), "STRING");
    const auto& got = fake.state().produced;
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].partition.value, 2);
    EXPECT_EQ(got[0].key, "k");
    EXPECT_EQ(got[0].value, R"({"x":1})");
    ASSERT_EQ(got[0].headers.size(), 1u);
    EXPECT_EQ(got[0].headers[0].second, "v");
}

TEST_F(RestFront, V3ProduceMapsBackendErrorsToTheReport) {
    fake.script().fail_next(fake_call::produce, api::errc::storage_error);
    auto res = call(verb::post, "/v3/clusters/cluster-1/topics/orders/records",
                    R"({"value":{"type":"STRING","data":"v"}})", "application/json");
    EXPECT_EQ(res.result_int(), 507) << res.body();
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 50701);
    res = call(verb::post, "/v3/clusters/cluster-1/topics/nope/records",
               R"({"value":{"type":"STRING","data":"v"}})", "application/json");
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40403);
    EXPECT_EQ(fake.script().count(fake_call::produce), 1u);
}

TEST_F(RestFront, V3ProduceSeveralRecordsGetOneReportEach) {
    auto res = call(verb::post, "/v3/clusters/cluster-1/topics/orders/records",
                    R"({"partition_id":0,"value":{"type":"STRING","data":"a"}})"
                    R"({"partition_id":0,"value":{"type":"BINARY","data":"!bad"}})"
                    R"({"partition_id":0,"value":{"type":"STRING","data":"b"}})",
                    "application/json");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    // Concatenated reports, as the REST Proxy streams them.
    EXPECT_NE(res.body().find(R"("offset":0)"), std::string::npos) << res.body();
    EXPECT_NE(res.body().find(R"("offset":1)"), std::string::npos) << res.body();
    EXPECT_NE(res.body().find(R"("error_code":400)"), std::string::npos) << res.body();
    ASSERT_EQ(fake.state().produced.size(), 2u);
    EXPECT_EQ(fake.state().produced[1].value, "b");
}

// --- v3 administration (v3_admin.cc, over api::admin) -----------------------------------------

TEST_F(RestFront, V3CreateTopicAsksTheBackendAndAnswersTheTopic) {
    auto res = call(verb::post, "/v3/clusters/cluster-1/topics",
                    R"({"topic_name":"made","partitions_count":4,)"
                    R"("configs":[{"name":"cleanup.policy","value":"compact"}]})",
                    "application/json");
    ASSERT_EQ(res.result_int(), 201) << res.body();
    auto doc = testing::parse_json(res.body());
    EXPECT_EQ(json::as_view(doc["kind"]), "KafkaTopic");
    EXPECT_EQ(doc["partitions_count"].GetInt(), 4);
    EXPECT_EQ(doc["replication_factor"].GetInt(), 1);
    EXPECT_EQ(fake.script().args_of(fake_call::create_topic),
              std::vector<std::string>{"made partitions=4"});
    EXPECT_EQ(fake.state().topics.at(topic_name("made")).description.overrides.at(
                  "cleanup.policy"),
              "compact");
    // validate_only creates nothing; a duplicate and a missing name are 400.
    res = call(verb::post, "/v3/clusters/cluster-1/topics",
               R"({"topic_name":"checked","partitions_count":1,"validate_only":true})",
               "application/json");
    EXPECT_EQ(res.result_int(), 200) << res.body();  // the openapi: 200 for a dry run
    EXPECT_FALSE(fake.state().topics.contains(topic_name("checked")));
    res = call(verb::post, "/v3/clusters/cluster-1/topics", R"({"topic_name":"made"})",
               "application/json");
    EXPECT_EQ(res.result_int(), 400) << res.body();
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40002);
    res = call(verb::post, "/v3/clusters/cluster-1/topics", R"({"partitions_count":1})",
               "application/json");
    EXPECT_EQ(res.result_int(), 400) << res.body();
}

TEST_F(RestFront, V3DeleteTopicAndBackendFailures) {
    auto res = call(verb::delete_, "/v3/clusters/cluster-1/topics/orders");
    EXPECT_EQ(res.result_int(), 204) << res.body();
    EXPECT_FALSE(fake.state().topics.contains(topic_name("orders")));
    res = call(verb::delete_, "/v3/clusters/cluster-1/topics/orders");
    EXPECT_EQ(res.result_int(), 404) << res.body();
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40403);
    fake.add_topic("spare", 1);
    fake.script().fail_next(fake_call::remove_topic, api::errc::backend_unavailable);
    res = call(verb::delete_, "/v3/clusters/cluster-1/topics/spare");
    EXPECT_EQ(res.result_int() / 100, 5u) << res.body();
    // Topics of sluice's own state are refused before the backend is asked.
    res = call(verb::delete_, "/v3/clusters/cluster-1/topics/__consumer_offsets");
    EXPECT_EQ(res.result_int(), 400) << res.body();
    EXPECT_EQ(fake.script().count(fake_call::remove_topic), 3u);  // orders twice, spare
}

TEST_F(RestFront, V3ConfigAlterationsReachTheBackend) {
    auto res = call(verb::post, "/v3/clusters/cluster-1/topics/orders/configs:alter",
                    R"({"data":[{"name":"retention.ms","value":"1000"},)"
                    R"({"name":"cleanup.policy","operation":"DELETE"}]})",
                    "application/json");
    EXPECT_EQ(res.result_int(), 204) << res.body();
    EXPECT_EQ(fake.state().topics.at(topic_name("orders")).description.overrides.at(
                  "retention.ms"),
              "1000");
    res = call(verb::post, "/v3/clusters/cluster-1/topics/orders/configs:alter",
               R"({"data":[{"name":"retention.ms"}]})", "application/json");
    EXPECT_EQ(res.result_int(), 400) << res.body();
    EXPECT_EQ(fake.script().count(fake_call::alter_configs), 1u);
}

TEST_F(RestFront, V3BrokersAreTheClusterTopology) {
    auto res = call(verb::get, "/v3/clusters/cluster-1/brokers");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    ASSERT_EQ(doc["data"].Size(), 1u);
    EXPECT_EQ(doc["data"][0]["broker_id"].GetInt(), 0);
    EXPECT_EQ(json::as_view(doc["data"][0]["host"]), "localhost");
    EXPECT_EQ(doc["data"][0]["port"].GetInt(), 9092);
    EXPECT_EQ(call(verb::get, "/v3/clusters/cluster-1/brokers/7").result_int(), 404);
    EXPECT_EQ(call(verb::get, "/v3/clusters/cluster-1/consumer-groups/none").result_int(), 404);
}

}  // namespace
}  // namespace sluice::gateway
