#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "gateway/http/json.h"
#include "gateway/http/queue_routes.h"
#include "gateway/httpcore/router.h"

namespace sluice::gateway {
namespace {
namespace asio = boost::asio;
namespace http = boost::beast::http;
namespace api = backend::api;
using http::verb;

api::backend_error queue_fail(api::errc e, std::string message = {}) {
    return {api::make_error_code(e), std::move(message)};
}

/// Queues as view_queues() and the move-task calls show them; every other call fails.
class fake_queues final : public api::queues {
public:
    std::vector<api::queue_view> views;
    /// What start_message_move_task answers next, and what it was called with.
    api::backend_result<std::string> start_answer = std::string("task-1");
    std::optional<std::string> started_source;
    std::optional<std::string> started_destination;
    std::optional<std::int32_t> started_rate;
    std::vector<api::move_task> tasks;

    static std::string arn(const std::string& q) {
        return "arn:aws:sqs:us-east-1:000000000000:" + q;
    }

    api::awaitable<api::backend_result<api::queue_name>> create_queue(api::queue_name,
                                                                    api::attribute_map,
                                                                    api::attribute_map) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<api::queue_name>> get_queue(api::queue_name) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<std::vector<api::queue_name>> list_queues(std::string) override {
        co_return std::vector<api::queue_name>{};
    }
    api::awaitable<api::backend_result<void>> delete_queue(api::queue_name) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<api::attribute_map>> get_attributes(
        api::queue_name name, std::vector<std::string>) override {
        for (const auto& v : views) {
            if (v.name == name) {
                co_return api::attribute_map{{"QueueArn", arn(name.value)}};
            }
        }
        co_return std::unexpected(queue_fail(api::errc::queue_does_not_exist, "no queue"));
    }
    api::awaitable<api::backend_result<void>> set_attributes(api::queue_name,
                                                           api::attribute_map) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<void>> purge_queue(api::queue_name) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<void>> tag_queue(api::queue_name,
                                                      api::attribute_map) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<void>> untag_queue(api::queue_name,
                                                        std::vector<std::string>) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<api::attribute_map>> list_tags(api::queue_name) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<void>> add_permission(api::queue_name, std::string,
                                                           std::vector<std::string>,
                                                           std::vector<std::string>) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<void>> remove_permission(api::queue_name,
                                                              std::string) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<std::vector<api::queue_name>>> dead_letter_source_queues(
        api::queue_name) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<std::vector<api::sent_message>>> send_messages(
        api::queue_name, std::vector<api::outgoing_message>) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<std::vector<api::received_message>>> receive_messages(
        api::receive_request) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<std::vector<api::backend_error>>> delete_messages(
        api::queue_name, std::vector<std::string>) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<std::vector<api::backend_error>>> change_visibility(
        api::queue_name, std::vector<api::visibility_change>) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    api::awaitable<api::backend_result<std::string>> start_message_move_task(
        std::string source_arn, std::optional<std::string> destination_arn,
        std::optional<std::int32_t> max_per_second) override {
        started_source = std::move(source_arn);
        started_destination = std::move(destination_arn);
        started_rate = max_per_second;
        co_return start_answer;
    }
    api::awaitable<api::backend_result<std::vector<api::move_task>>> list_message_move_tasks(
        std::string, std::int32_t) override {
        co_return tasks;
    }
    api::awaitable<api::backend_result<std::int64_t>> cancel_message_move_task(std::string) override {
        co_return std::unexpected(queue_fail(api::errc::unsupported));
    }
    std::optional<api::move_task> find_message_move_task(const std::string&) const override {
        return std::nullopt;
    }
    std::vector<api::queue_view> view_queues() const override { return views; }
};

api::queue_view view(std::string name, std::int64_t available,
                     std::optional<std::string> dlq = std::nullopt) {
    api::queue_view v;
    v.name = api::queue_name(std::move(name));
    v.available = available;
    v.in_flight = 1;
    v.delayed = 2;
    v.oldest_age_ms = 1500;
    if (dlq) {
        v.dead_letter_queue = api::queue_name(*dlq);
    }
    return v;
}

class QueueRoutes : public ::testing::Test {
protected:
    QueueRoutes() {
        queues.views = {view("orders", 5, "orders-dlq"), view("orders-dlq", 3),
                        view("plain", 0)};
        add_queue_routes(r, queues);
    }

    http_response call(verb method, std::string target, std::string body = {}) {
        http_request req{method, target, 11};
        req.body() = std::move(body);
        req.prepare_payload();
        asio::io_context io;
        std::optional<handler_result> out;
        std::exception_ptr failure;
        http_request_context ctx;
        ctx.req = std::move(req);
        asio::co_spawn(io, r.dispatch(std::move(ctx)),
                       [&](std::exception_ptr e, handler_result result) {
                           failure = e;
                           if (!e) {
                               out.emplace(std::move(result));
                           }
                       });
        io.run();
        if (failure) {
            std::rethrow_exception(failure);
        }
        return std::get<http_response>(std::move(*out));
    }

    json::document parsed(const http_response& res) {
        json::document doc;
        EXPECT_FALSE(json::parse(res.body(), doc).has_value()) << res.body();
        return doc;
    }

    fake_queues queues;
    router r;
};

TEST_F(QueueRoutes, ListsEveryQueueWithItsDeadLetterQueueDepth) {
    auto res = call(verb::get, "/v1/queues");
    ASSERT_EQ(res.result_int(), 200);
    auto doc = parsed(res);
    const auto& list = doc["queues"];
    ASSERT_EQ(list.Size(), 3u);
    EXPECT_EQ(json::as_view(list[0]["name"]), "orders");
    EXPECT_EQ(list[0]["available"].GetInt64(), 5);
    EXPECT_EQ(list[0]["in_flight"].GetInt64(), 1);
    EXPECT_EQ(list[0]["delayed"].GetInt64(), 2);
    EXPECT_EQ(list[0]["oldest_age_ms"].GetInt64(), 1500);
    EXPECT_EQ(json::as_view(list[0]["dead_letter_queue"]), "orders-dlq");
    // 3 available + 1 in flight + 2 delayed in the dead-letter queue.
    EXPECT_EQ(list[0]["dead_letter_queue_depth"].GetInt64(), 6);
    EXPECT_EQ(list[0]["dead_letter_sources"].Size(), 0u);
    EXPECT_EQ(json::as_view(list[1]["name"]), "orders-dlq");
    ASSERT_EQ(list[1]["dead_letter_sources"].Size(), 1u);
    EXPECT_EQ(json::as_view(list[1]["dead_letter_sources"][0]), "orders");
    EXPECT_TRUE(list[2]["dead_letter_queue"].IsNull());
}

TEST_F(QueueRoutes, OneQueueOrNotFound) {
    auto res = call(verb::get, "/v1/queues/orders-dlq");
    ASSERT_EQ(res.result_int(), 200);
    EXPECT_EQ(json::as_view(parsed(res)["name"]), "orders-dlq");
    res = call(verb::get, "/v1/queues/nope");
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_NE(res.body().find("queue nope not found"), std::string::npos) << res.body();
}

TEST_F(QueueRoutes, RedriveStartsAMoveTaskFromTheDeadLetterQueue) {
    auto res = call(verb::post, "/v1/queues/orders-dlq/redrive");
    ASSERT_EQ(res.result_int(), 202) << res.body();
    auto doc = parsed(res);
    EXPECT_EQ(json::as_view(doc["task_handle"]), "task-1");
    EXPECT_EQ(queues.started_source, fake_queues::arn("orders-dlq"));
    EXPECT_FALSE(queues.started_destination.has_value());
    EXPECT_FALSE(queues.started_rate.has_value());
}

TEST_F(QueueRoutes, RedriveToADestinationAtARate) {
    auto res = call(verb::post, "/v1/queues/orders-dlq/redrive",
                    R"({"destination":"plain","max_per_second":7})");
    ASSERT_EQ(res.result_int(), 202) << res.body();
    EXPECT_EQ(queues.started_destination, fake_queues::arn("plain"));
    EXPECT_EQ(queues.started_rate, 7);
}

TEST_F(QueueRoutes, RedriveErrors) {
    auto res = call(verb::post, "/v1/queues/nope/redrive");
    EXPECT_EQ(res.result_int(), 404);
    res = call(verb::post, "/v1/queues/plain/redrive");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_NE(res.body().find("not a dead-letter queue"), std::string::npos) << res.body();
    res = call(verb::post, "/v1/queues/orders-dlq/redrive", "{not json");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_NE(res.body().find("not JSON"), std::string::npos) << res.body();
    res = call(verb::post, "/v1/queues/orders-dlq/redrive", R"({"destination":"gone"})");
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_NE(res.body().find("gone"), std::string::npos) << res.body();
    EXPECT_FALSE(queues.started_source.has_value());
    queues.start_answer = std::unexpected(queue_fail(api::errc::unsupported_operation,
                                               "a task is already running"));
    res = call(verb::post, "/v1/queues/orders-dlq/redrive");
    EXPECT_EQ(res.result_int(), 409);
    EXPECT_NE(res.body().find("already running"), std::string::npos) << res.body();
}

TEST_F(QueueRoutes, MoveTasksShowProgress) {
    api::move_task t;
    t.task_handle = "task-1";
    t.status = "RUNNING";
    t.source_arn = fake_queues::arn("orders-dlq");
    t.moved = 2;
    t.to_move = 3;
    queues.tasks = {t};
    auto res = call(verb::get, "/v1/queues/orders-dlq/move-tasks");
    ASSERT_EQ(res.result_int(), 200);
    auto doc = parsed(res);
    ASSERT_EQ(doc["tasks"].Size(), 1u);
    EXPECT_EQ(json::as_view(doc["tasks"][0]["status"]), "RUNNING");
    EXPECT_EQ(doc["tasks"][0]["moved"].GetInt64(), 2);
    EXPECT_EQ(doc["tasks"][0]["to_move"].GetInt64(), 3);
    EXPECT_TRUE(doc["tasks"][0]["destination_arn"].IsNull());
    EXPECT_EQ(call(verb::get, "/v1/queues/nope/move-tasks").result_int(), 404);
}

TEST(RedriveRequest, ParsesTheBody) {
    auto empty = parse_redrive_request(" \n");
    ASSERT_TRUE(std::holds_alternative<redrive_request>(empty));
    EXPECT_FALSE(std::get<redrive_request>(empty).destination.has_value());
    auto full = parse_redrive_request(R"({"destination":"q","max_per_second":500})");
    ASSERT_TRUE(std::holds_alternative<redrive_request>(full));
    EXPECT_EQ(std::get<redrive_request>(full).destination, "q");
    EXPECT_EQ(std::get<redrive_request>(full).max_per_second, 500);
    for (const char* bad : {"[]", "{\"max_per_second\":0}", "{\"max_per_second\":501}",
                            "{\"max_per_second\":\"5\"}", "{\"destination\":1}",
                            "{\"destination\":\"\"}", "{\"other\":1}", "{"}) {
        EXPECT_TRUE(std::holds_alternative<std::string>(parse_redrive_request(bad))) << bad;
    }
}

}  // namespace
}  // namespace sluice::gateway
