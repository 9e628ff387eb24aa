// The REST Proxy's consumer routes (gateway/http/rest/consumer_routes.cc, consumer_instance,
// consumer_registry, consumer_store) over the fake backend: instances created and kept in
// _sluice_rest_consumers, a manual assignment read, commits and committed offsets, errors. The
// registry runs background work (its loader and expiry loop) on the test's io_context, which
// each call runs until the request is answered.
#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "gateway/http/http_settings.h"
#include "gateway/http/record_producer.h"
#include "gateway/http/rest/consumer_registry.h"
#include "gateway/http/rest/rest_routes.h"

#include "tests/gateway/fake_backend.h"
#include "tests/gateway/fake_client.h"
#include "tests/gateway/front_support.h"

namespace sluice::gateway {
namespace {
namespace asio = boost::asio;
using boost::beast::http::verb;
using testing::fake_call;
namespace api = backend::api;

constexpr const char* v2 = "application/vnd.kafka.v2+json";

class RestConsumers : public ::testing::Test {
protected:
    RestConsumers()
        : producer(*client_level, api::acks::all),
          rc{settings, "cluster-1", 0, producer, {},
             client_level.get()},
          registry(rc, [this] { return asio::any_io_executor(io.get_executor()); }) {
        fake.add_topic("orders", 3);
        rest::add_v2_consumer_routes(routes, rc, registry);
        registry.start();
    }
    ~RestConsumers() override {
        registry.stop();
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (registry.pending() > 0 && std::chrono::steady_clock::now() < deadline) {
            io.run_one_for(std::chrono::milliseconds(50));
        }
        EXPECT_EQ(registry.pending(), 0u);
    }

    http_response call(verb method, std::string target, std::string body = {},
                       std::string accept = {}) {
        http_request_context ctx;
        ctx.req = testing::make_request(method, std::move(target), std::move(body),
                                        method == verb::get ? "" : v2);
        if (!accept.empty()) {
            ctx.req.set(boost::beast::http::field::accept, accept);
        }
        ctx.peer = {asio::ip::make_address("127.0.0.1"), 40000};
        std::optional<handler_result> out;
        std::exception_ptr failure;
        bool done = false;
        asio::co_spawn(io, routes.dispatch(std::move(ctx)),
                       [&](std::exception_ptr e, handler_result r) {
                           failure = e;
                           if (!e) {
                               out.emplace(std::move(r));
                           }
                           done = true;
                       });
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!done && std::chrono::steady_clock::now() < deadline) {
            io.run_one_for(std::chrono::milliseconds(50));
        }
        EXPECT_TRUE(done) << "no answer";
        if (failure) {
            std::rethrow_exception(failure);
        }
        if (!out) {
            return http_response{};
        }
        return std::get<http_response>(std::move(*out));
    }

    void seed(std::int32_t partition, std::vector<std::string> values) {
        std::vector<outgoing_record> records;
        for (auto& v : values) {
            outgoing_record r;
            r.value = std::move(v);
            r.partition = partition;
            records.push_back(std::move(r));
        }
        bool done = false;
        asio::co_spawn(io, producer.produce(topic_name("orders"), std::move(records)),
                       [&](std::exception_ptr, produce_outcome) { done = true; });
        while (!done) {
            io.run_one();
        }
    }

    const std::string base = "/consumers/g/instances/c1";

    testing::fake_backend fake;
    std::unique_ptr<backend::api::client> client_level = testing::client_over(fake);
    http_settings settings;
    record_producer producer;
    rest::rest_context rc;
    asio::io_context io;
    rest::consumer_registry registry;
    router routes;
};

TEST_F(RestConsumers, CreatingAnInstanceKeepsItInTheStoreTopic) {
    auto res = call(verb::post, "/consumers/g", R"({"name":"c1","format":"json"})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    EXPECT_EQ(json::as_view(doc["instance_id"]), "c1");
    EXPECT_EQ(json::as_view(doc["base_uri"]), "http://localhost:8082/consumers/g/instances/c1");
    // The store's topic is created on its first write, compacted, and holds the instance.
    const auto created = fake.script().args_of(fake_call::create_topic);
    ASSERT_EQ(created.size(), 1u);
    EXPECT_EQ(created[0], "_sluice_rest_consumers partitions=1");
    EXPECT_EQ(fake.state().topics.at(topic_name("_sluice_rest_consumers"))
                  .description.overrides.at("cleanup.policy"),
              "compact");
    ASSERT_FALSE(fake.state().produced.empty());
    const auto& stored = fake.state().produced.back();
    EXPECT_EQ(stored.topic.value, "_sluice_rest_consumers");
    EXPECT_EQ(stored.key, std::string("g\0c1", 4));
    EXPECT_NE(stored.value->find(R"("format":"json")"), std::string::npos) << *stored.value;
}

TEST_F(RestConsumers, AStoreTopicTheClusterRefusesIsNotAskedForOnEverySave) {
    // The cluster refuses to create _sluice_rest_consumers: the instance is still served, and
    // the next saves within the pause do not ask for the topic again.
    fake.script().fail_next(fake_call::create_topic, api::errc::policy_violation,
                            "topic creation is disabled");
    auto res = call(verb::post, "/consumers/g", R"({"name":"c1","format":"json"})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    res = call(verb::post, "/consumers/g", R"({"name":"c2","format":"json"})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    res = call(verb::post, base + "/assignments",
               R"({"partitions":[{"topic":"orders","partition":0}]})");
    EXPECT_EQ(res.result_int(), 204) << res.body();
    EXPECT_EQ(fake.script().args_of(fake_call::create_topic).size(), 1u);
    for (const auto& p : fake.state().produced) {
        EXPECT_NE(p.topic.value, "_sluice_rest_consumers");
    }
}

TEST_F(RestConsumers, CreateRefusesADuplicateAndBadConfigs) {
    ASSERT_EQ(call(verb::post, "/consumers/g", R"({"name":"c1"})").result_int(), 200);
    auto res = call(verb::post, "/consumers/g", R"({"name":"c1"})");
    EXPECT_EQ(res.result_int(), 409);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40902);
    res = call(verb::post, "/consumers/g", R"({"name":"c2","format":"avro"})");
    EXPECT_EQ(res.result_int(), 422);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 42204);
    res = call(verb::post, "/consumers/g", R"({"name":"c3","auto.offset.reset":"sometime"})");
    EXPECT_EQ(res.result_int(), 422);
}

TEST_F(RestConsumers, AnAssignedPartitionIsReadFromTheBackend) {
    seed(1, {R"({"n":1})", R"({"n":2})"});
    ASSERT_EQ(call(verb::post, "/consumers/g",
                   R"({"name":"c1","format":"json","auto.offset.reset":"earliest"})")
                  .result_int(),
              200);
    auto res = call(verb::post, base + "/assignments",
                    R"({"partitions":[{"topic":"orders","partition":1}]})");
    ASSERT_EQ(res.result_int(), 204) << res.body();
    res = call(verb::get, base + "/records?timeout=200", {}, "application/vnd.kafka.json.v2+json");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    ASSERT_EQ(doc.Size(), 2u) << res.body();
    EXPECT_EQ(json::as_view(doc[0]["topic"]), "orders");
    EXPECT_EQ(doc[0]["partition"].GetInt(), 1);
    EXPECT_EQ(doc[1]["offset"].GetInt64(), 1);
    EXPECT_EQ(doc[1]["value"]["n"].GetInt(), 2);
    ASSERT_FALSE(fake.state().fetch_requests.empty());
    const auto& f = fake.state().fetch_requests.back();
    EXPECT_EQ(f.topics.at(0).topic.value, "orders");
    EXPECT_EQ(f.topics.at(0).partitions.at(0).partition.value, 1);
}

TEST_F(RestConsumers, RecordsInAnotherFormatOrOfNoInstance) {
    ASSERT_EQ(call(verb::post, "/consumers/g", R"({"name":"c1","format":"binary"})").result_int(),
              200);
    auto res = call(verb::get, base + "/records", {}, "application/vnd.kafka.json.v2+json");
    EXPECT_EQ(res.result_int(), 406);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40601);
    res = call(verb::get, "/consumers/g/instances/nope/records");
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 40403);
    EXPECT_EQ(fake.script().count(fake_call::fetch), 0u);
}

TEST_F(RestConsumers, ACommitReachesTheBackendAsTheNextOffset) {
    ASSERT_EQ(call(verb::post, "/consumers/g", R"({"name":"c1"})").result_int(), 200);
    auto res = call(verb::post, base + "/offsets",
                    R"({"offsets":[{"topic":"orders","partition":1,"offset":4}]})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    EXPECT_EQ(fake.script().args_of(fake_call::commit_offsets),
              std::vector<std::string>{"g orders p1=5"});
    auto doc = testing::parse_json(res.body());
    EXPECT_EQ(doc[0]["committed"].GetInt64(), 5);
}

TEST_F(RestConsumers, ACommitTheBackendRefusesIsMapped) {
    ASSERT_EQ(call(verb::post, "/consumers/g", R"({"name":"c1"})").result_int(), 200);
    fake.script().fail_next(fake_call::commit_offsets, api::errc::coordinator_not_available);
    auto res = call(verb::post, base + "/offsets",
                    R"({"offsets":[{"topic":"orders","partition":1,"offset":4}]})");
    EXPECT_EQ(res.result_int(), 500);
    EXPECT_EQ(testing::parse_json(res.body())["error_code"].GetInt(), 50003);
    res = call(verb::post, base + "/offsets",
               R"({"offsets":[{"topic":"orders","partition":1,"offset":-4}]})");
    EXPECT_EQ(res.result_int(), 422);
    EXPECT_EQ(fake.script().count(fake_call::commit_offsets), 1u);
}

TEST_F(RestConsumers, CommittedOffsetsComeFromTheGroup) {
    fake.state().groups[group_id("g")].committed[{topic_name("orders"), partition_id(2)}] = 9;
    ASSERT_EQ(call(verb::post, "/consumers/g", R"({"name":"c1"})").result_int(), 200);
    auto res = call(verb::get, base + "/offsets",
                    R"({"partitions":[{"topic":"orders","partition":2}]})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    ASSERT_EQ(doc["offsets"].Size(), 1u) << res.body();
    EXPECT_EQ(doc["offsets"][0]["offset"].GetInt64(), 9);
    EXPECT_EQ(fake.script().args_of(fake_call::fetch_offsets), std::vector<std::string>{"g"});
}

}  // namespace
}  // namespace sluice::gateway
