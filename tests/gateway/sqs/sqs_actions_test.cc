// The SQS actions (gateway/sqs/actions_*.cc) through sqs_front::handle over the fake backend, in
// both wire protocols (AWS JSON 1.0 and Query): what reaches api::queues, the digests, and how
// backend errors come out as SQS errors.
#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include "gateway/core/metrics.h"
#include "gateway/sqs/md5.h"
#include "gateway/sqs/sqs_front.h"

#include "tests/gateway/fake_backend.h"
#include "tests/gateway/front_support.h"

namespace sluice::gateway::sqs {
namespace {
using boost::beast::http::verb;
using testing::fake_call;
namespace api = backend::api;

constexpr const char* hello_md5 = "5d41402abc4b2a76b9719d911017c592";  // md5("hello")

std::string url(const std::string& queue) {
    return "http://localhost:9324/000000000000/" + queue;
}

class SqsActions : public ::testing::Test {
protected:
    SqsActions() : front(fake.queues(), sqs_settings{}, metrics) {
        fake.add_queue("orders");
        fake.add_queue("jobs.fifo");
    }

    http_response run(http_request req) {
        return testing::answer_of(std::move(req), [&](http_request_context ctx) {
            return front.handle(std::move(ctx));
        });
    }
    /// An action in the JSON protocol; `body` is the request's JSON object.
    http_response json_call(const std::string& action, std::string body) {
        auto req = testing::make_request(verb::post, "/", std::move(body),
                                         "application/x-amz-json-1.0");
        req.set("X-Amz-Target", "AmazonSQS." + action);
        return run(std::move(req));
    }
    /// An action in the Query protocol; `form` is the urlencoded body without Action.
    http_response query_call(const std::string& action, const std::string& form) {
        return run(testing::make_request(verb::post, "/", "Action=" + action + "&" + form,
                                         "application/x-www-form-urlencoded"));
    }
    static std::string json_type(const http_response& res) {
        auto doc = testing::parse_json(res.body());
        return std::string(json::as_view(doc["__type"]));
    }
    /// Sends `bodies` to orders through the fake directly and receives them (in flight now).
    std::vector<std::string> received_handles(std::vector<std::string> bodies) {
        for (auto& b : bodies) {
            testing::fake_message m;
            m.message_id = "seeded-" + b;
            m.sent.body = b;
            fake.state().queues.at(api::queue_name("orders")).messages.push_back(std::move(m));
        }
        auto res = json_call("ReceiveMessage",
                             R"({"QueueUrl":")" + url("orders") + R"(","MaxNumberOfMessages":10})");
        EXPECT_EQ(res.result_int(), 200) << res.body();
        auto doc = testing::parse_json(res.body());
        std::vector<std::string> out;
        const auto* messages = json::member(doc, "Messages");
        if (messages == nullptr) {
            return out;
        }
        for (const auto& m : messages->GetArray()) {
            out.emplace_back(json::as_view(m["ReceiptHandle"]));
        }
        return out;
    }

    testing::fake_backend fake;
    metrics_registry metrics;
    sqs_front front;
};

// --- SendMessage(Batch) ------------------------------------------------------------------------

TEST_F(SqsActions, SendMessageJsonForwardsTheMessageAndAnswersItsDigests) {
    auto res = json_call("SendMessage", R"({"QueueUrl":")" + url("orders") +
                                            R"(","MessageBody":"hello","DelaySeconds":5,)"
                                            R"("MessageAttributes":{"color":{"DataType":"String",)"
                                            R"("StringValue":"red"}}})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    EXPECT_EQ(json::as_view(doc["MD5OfMessageBody"]), hello_md5);
    const std::vector<api::message_attribute> sent_attrs{{"color", "String", "red"}};
    EXPECT_EQ(json::as_view(doc["MD5OfMessageAttributes"]), md5_of_attributes(sent_attrs));
    EXPECT_FALSE(json::member(doc, "MD5OfMessageSystemAttributes"));
    EXPECT_EQ(json::as_view(doc["MessageId"]), "msg-1");

    const auto& sent = fake.state().sent;
    ASSERT_EQ(sent.size(), 1u);
    EXPECT_EQ(sent[0].first.value, "orders");
    EXPECT_EQ(sent[0].second.body, "hello");
    EXPECT_EQ(sent[0].second.attributes, sent_attrs);
    EXPECT_EQ(sent[0].second.delay, std::chrono::seconds(5));
}

TEST_F(SqsActions, SendMessageQueryAnswersXmlWithTheSameDigests) {
    auto res = query_call("SendMessage", "QueueUrl=" + url("jobs.fifo") +
                                             "&MessageBody=hello&MessageGroupId=g1"
                                             "&MessageDeduplicationId=d1"
                                             "&MessageAttribute.1.Name=n"
                                             "&MessageAttribute.1.Value.DataType=Number"
                                             "&MessageAttribute.1.Value.StringValue=7");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    EXPECT_NE(res.body().find(std::string("<MD5OfMessageBody>") + hello_md5), std::string::npos)
        << res.body();
    const std::vector<api::message_attribute> attrs{{"n", "Number", "7"}};
    EXPECT_NE(res.body().find("<MD5OfMessageAttributes>" + md5_of_attributes(attrs)),
              std::string::npos)
        << res.body();
    EXPECT_NE(res.body().find("<SequenceNumber>"), std::string::npos) << res.body();
    const auto& m = fake.state().sent.at(0).second;
    EXPECT_EQ(m.group_id, "g1");
    EXPECT_EQ(m.deduplication_id, "d1");
}

TEST_F(SqsActions, SendMessageValidatesBeforeTheBackend) {
    auto res = json_call("SendMessage", R"({"QueueUrl":")" + url("orders") + R"("})");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#MissingParameter");
    res = json_call("SendMessage", R"({"QueueUrl":")" + url("orders") +
                                       R"(","MessageBody":"x","MessageAttributes":{"a":)"
                                       R"({"DataType":"Binary","StringValue":"x"}}})");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#InvalidParameterValue");
    res = json_call("SendMessage", R"({"MessageBody":"x"})");
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#MissingParameter");
    EXPECT_EQ(fake.script().count(fake_call::send_messages), 0u);
}

TEST_F(SqsActions, SendMessageToAMissingQueueInBothProtocols) {
    auto res = json_call("SendMessage", R"({"QueueUrl":")" + url("nope") + R"(","MessageBody":"x"})");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#QueueDoesNotExist");
    EXPECT_EQ(res["x-amzn-query-error"], "AWS.SimpleQueueService.NonExistentQueue;Sender");
    res = query_call("SendMessage", "QueueUrl=" + url("nope") + "&MessageBody=x");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_NE(res.body().find("<Code>AWS.SimpleQueueService.NonExistentQueue</Code>"),
              std::string::npos)
        << res.body();
    EXPECT_NE(res.body().find("<Type>Sender</Type>"), std::string::npos);
}

TEST_F(SqsActions, BackendFailuresBecomeServerErrors) {
    fake.script().fail_next(fake_call::send_messages, api::errc::not_leader, "stopping");
    auto res = json_call("SendMessage", R"({"QueueUrl":")" + url("orders") + R"(","MessageBody":"x"})");
    EXPECT_EQ(res.result_int(), 503);
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#ServiceUnavailable");
    EXPECT_EQ(res["x-amzn-query-error"], "ServiceUnavailable;Receiver");
    fake.script().fail_next(fake_call::send_messages, api::errc::storage_error, "disk full");
    res = json_call("SendMessage", R"({"QueueUrl":")" + url("orders") + R"(","MessageBody":"x"})");
    EXPECT_EQ(res.result_int(), 500);
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#InternalFailure");
    EXPECT_NE(res.body().find("disk full"), std::string::npos) << res.body();
    fake.script().fail_next(fake_call::send_messages, api::errc::message_too_large);
    res = json_call("SendMessage", R"({"QueueUrl":")" + url("orders") + R"(","MessageBody":"x"})");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#InvalidParameterValue");
}

TEST_F(SqsActions, SendMessageBatchAnswersEachEntry) {
    fake.state().refused_bodies["bad"] = testing::scripted_error(
        api::errc::invalid_message_contents, "Invalid characters found.");
    auto res = json_call("SendMessageBatch",
                         R"({"QueueUrl":")" + url("orders") + R"(","Entries":[)"
                         R"({"Id":"a","MessageBody":"hello"},{"Id":"b","MessageBody":"bad"},)"
                         R"({"Id":"c"}]})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    ASSERT_EQ(doc["Successful"].Size(), 1u);
    EXPECT_EQ(json::as_view(doc["Successful"][0]["Id"]), "a");
    EXPECT_EQ(json::as_view(doc["Successful"][0]["MD5OfMessageBody"]), hello_md5);
    ASSERT_EQ(doc["Failed"].Size(), 2u);
    EXPECT_EQ(json::as_view(doc["Failed"][0]["Id"]), "b");
    EXPECT_EQ(json::as_view(doc["Failed"][0]["Code"]), "InvalidMessageContents");
    EXPECT_TRUE(doc["Failed"][0]["SenderFault"].GetBool());
    EXPECT_EQ(json::as_view(doc["Failed"][1]["Id"]), "c");
    EXPECT_EQ(json::as_view(doc["Failed"][1]["Code"]), "MissingParameter");
    // The entry the front refused never reached the backend.
    EXPECT_EQ(fake.script().args_of(fake_call::send_messages),
              std::vector<std::string>{"orders messages=2"});
}

TEST_F(SqsActions, SendMessageBatchShapeErrorsStopBeforeTheBackend) {
    auto res = query_call("SendMessageBatch",
                          "QueueUrl=" + url("orders") +
                              "&SendMessageBatchRequestEntry.1.Id=a"
                              "&SendMessageBatchRequestEntry.1.MessageBody=x"
                              "&SendMessageBatchRequestEntry.2.Id=a"
                              "&SendMessageBatchRequestEntry.2.MessageBody=y");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_NE(res.body().find("AWS.SimpleQueueService.BatchEntryIdsNotDistinct"),
              std::string::npos)
        << res.body();
    std::string entries;
    for (int i = 1; i <= 11; ++i) {
        entries += (i > 1 ? "," : "") + std::string(R"({"Id":"e)") + std::to_string(i) +
                   R"(","MessageBody":"x"})";
    }
    res = json_call("SendMessageBatch",
                    R"({"QueueUrl":")" + url("orders") + R"(","Entries":[)" + entries + "]}");
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#TooManyEntriesInBatchRequest");
    res = json_call("SendMessageBatch", R"({"QueueUrl":")" + url("orders") + R"(","Entries":[]})");
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#EmptyBatchRequest");
    EXPECT_EQ(fake.script().count(fake_call::send_messages), 0u);
}

// --- ReceiveMessage ----------------------------------------------------------------------------

TEST_F(SqsActions, ReceiveMessageForwardsItsParametersAndPicksAttributes) {
    ASSERT_EQ(json_call("SendMessage", R"({"QueueUrl":")" + url("orders") +
                                           R"(","MessageBody":"hello","MessageAttributes":{)"
                                           R"("a":{"DataType":"String","StringValue":"1"},)"
                                           R"("b":{"DataType":"Binary","BinaryValue":"AAE="}}})")
                  .result_int(),
              200);
    auto res = json_call("ReceiveMessage",
                         R"({"QueueUrl":")" + url("orders") +
                             R"(","MaxNumberOfMessages":5,"VisibilityTimeout":45,)"
                             R"("WaitTimeSeconds":2,"ReceiveRequestAttemptId":"att",)"
                             R"("MessageAttributeNames":["a"],)"
                             R"("MessageSystemAttributeNames":["ApproximateReceiveCount"]})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    const auto& r = fake.state().receives.at(0);
    EXPECT_EQ(r.queue.value, "orders");
    EXPECT_EQ(r.max_messages, 5);
    EXPECT_EQ(r.visibility_timeout, std::chrono::seconds(45));
    EXPECT_EQ(r.wait, std::chrono::seconds(2));
    EXPECT_EQ(r.attempt_id, "att");

    auto doc = testing::parse_json(res.body());
    ASSERT_EQ(doc["Messages"].Size(), 1u);
    const auto& m = doc["Messages"][0];
    EXPECT_EQ(json::as_view(m["Body"]), "hello");
    EXPECT_EQ(json::as_view(m["MD5OfBody"]), hello_md5);
    EXPECT_FALSE(json::as_view(m["ReceiptHandle"]).empty());
    // Only the attributes asked for, and the digest of those.
    EXPECT_TRUE(json::member(m["MessageAttributes"], "a"));
    EXPECT_FALSE(json::member(m["MessageAttributes"], "b"));
    const std::vector<api::message_attribute> chosen{{"a", "String", "1"}};
    EXPECT_EQ(json::as_view(m["MD5OfMessageAttributes"]), md5_of_attributes(chosen));
    EXPECT_EQ(json::as_view(m["Attributes"]["ApproximateReceiveCount"]), "1");
    EXPECT_FALSE(json::member(m["Attributes"], "SentTimestamp"));
}

TEST_F(SqsActions, ReceiveMessageWithNothingAnswersNoMessages) {
    auto res = json_call("ReceiveMessage", R"({"QueueUrl":")" + url("orders") + R"("})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    EXPECT_FALSE(json::member(testing::parse_json(res.body()), "Messages"));
    EXPECT_EQ(fake.state().receives.at(0).max_messages, 1);  // SQS's default
    EXPECT_FALSE(fake.state().receives.at(0).wait.has_value());
}

TEST_F(SqsActions, ReceiveMessageLeavesTheRangeOfMaxNumberToTheBackend) {
    auto res = query_call("ReceiveMessage", "QueueUrl=" + url("orders") + "&MaxNumberOfMessages=11");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_NE(res.body().find("<Code>InvalidParameterValue</Code>"), std::string::npos)
        << res.body();
    EXPECT_EQ(fake.state().receives.at(0).max_messages, 11);
}

TEST_F(SqsActions, ReceiveMessageQueryAnswersXml) {
    json_call("SendMessage", R"({"QueueUrl":")" + url("orders") + R"(","MessageBody":"a&b"})");
    auto res = query_call("ReceiveMessage", "QueueUrl=" + url("orders") + "&AttributeName.1=All");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    EXPECT_NE(res.body().find("<Body>a&amp;b</Body>"), std::string::npos) << res.body();
    EXPECT_NE(res.body().find("<Name>SenderId</Name>"), std::string::npos) << res.body();
    EXPECT_NE(res.body().find("<ReceiptHandle>rh-msg-"), std::string::npos) << res.body();
}

TEST_F(SqsActions, ReceivedBodiesSqsCannotCarryAreRepairedAndDigestedAsSent) {
    // A record a Kafka producer wrote may hold bytes SQS's text cannot: the client gets them
    // replaced, and the digest is of what it gets.
    testing::fake_message m;
    m.message_id = "raw";
    m.sent.body = std::string("a\x01b\xff", 4);
    fake.state().queues.at(api::queue_name("orders")).messages.push_back(std::move(m));
    auto res = json_call("ReceiveMessage", R"({"QueueUrl":")" + url("orders") + R"("})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    const std::string body(json::as_view(doc["Messages"][0]["Body"]));
    EXPECT_NE(body, std::string("a\x01b\xff", 4));
    EXPECT_EQ(json::as_view(doc["Messages"][0]["MD5OfBody"]), md5_hex(body));
}

TEST_F(SqsActions, ScriptedDelayHoldsTheAnswer) {
    fake.script().delay_next(fake_call::receive_messages, std::chrono::milliseconds(30));
    const auto start = std::chrono::steady_clock::now();
    auto res = json_call("ReceiveMessage", R"({"QueueUrl":")" + url("orders") + R"("})");
    EXPECT_EQ(res.result_int(), 200);
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(30));
}

// --- DeleteMessage(Batch), ChangeMessageVisibility(Batch) --------------------------------------

TEST_F(SqsActions, DeleteMessageByHandle) {
    auto handles = received_handles({"one"});
    ASSERT_EQ(handles.size(), 1u);
    auto res = json_call("DeleteMessage", R"({"QueueUrl":")" + url("orders") +
                                              R"(","ReceiptHandle":")" + handles[0] + R"("})");
    EXPECT_EQ(res.result_int(), 200) << res.body();
    EXPECT_TRUE(fake.state().queues.at(api::queue_name("orders")).messages.empty());
    res = query_call("DeleteMessage", "QueueUrl=" + url("orders") + "&ReceiptHandle=forged");
    EXPECT_EQ(res.result_int(), 404);
    EXPECT_NE(res.body().find("<Code>ReceiptHandleIsInvalid</Code>"), std::string::npos);
    res = json_call("DeleteMessage", R"({"QueueUrl":")" + url("orders") + R"("})");
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#MissingParameter");
    EXPECT_EQ(fake.state().deleted_handles.size(), 2u);
}

TEST_F(SqsActions, DeleteMessageBatchAnswersEachEntry) {
    auto handles = received_handles({"one"});
    ASSERT_EQ(handles.size(), 1u);
    auto res = json_call("DeleteMessageBatch",
                         R"({"QueueUrl":")" + url("orders") + R"(","Entries":[)"
                         R"({"Id":"ok","ReceiptHandle":")" + handles[0] + R"("},)"
                         R"({"Id":"forged","ReceiptHandle":"nope"},{"Id":"none"}]})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    ASSERT_EQ(doc["Successful"].Size(), 1u);
    EXPECT_EQ(json::as_view(doc["Successful"][0]["Id"]), "ok");
    ASSERT_EQ(doc["Failed"].Size(), 2u);
    EXPECT_EQ(json::as_view(doc["Failed"][0]["Code"]), "ReceiptHandleIsInvalid");
    EXPECT_EQ(json::as_view(doc["Failed"][1]["Id"]), "none");
    EXPECT_EQ(json::as_view(doc["Failed"][1]["Code"]), "MissingParameter");
}

TEST_F(SqsActions, DeleteMessageBatchQueueLevelFailure) {
    fake.script().fail_next(fake_call::delete_messages, api::errc::queue_does_not_exist, "gone");
    auto res = json_call("DeleteMessageBatch", R"({"QueueUrl":")" + url("orders") +
                                                   R"(","Entries":[{"Id":"a","ReceiptHandle":"h"}]})");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#QueueDoesNotExist");
}

TEST_F(SqsActions, ChangeMessageVisibilityForwardsTheTimeout) {
    auto handles = received_handles({"one"});
    ASSERT_EQ(handles.size(), 1u);
    auto res = query_call("ChangeMessageVisibility", "QueueUrl=" + url("orders") +
                                                         "&ReceiptHandle=" + handles[0] +
                                                         "&VisibilityTimeout=0");
    EXPECT_EQ(res.result_int(), 200) << res.body();
    ASSERT_EQ(fake.state().visibility_changes.size(), 1u);
    EXPECT_EQ(fake.state().visibility_changes[0].second.timeout, std::chrono::seconds(0));
    // Visible again: a second change finds it not in flight.
    res = json_call("ChangeMessageVisibility", R"({"QueueUrl":")" + url("orders") +
                                                   R"(","ReceiptHandle":")" + handles[0] +
                                                   R"(","VisibilityTimeout":10})");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#MessageNotInflight");
    res = json_call("ChangeMessageVisibility", R"({"QueueUrl":")" + url("orders") +
                                                   R"(","ReceiptHandle":"h"})");
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#MissingParameter");
    EXPECT_EQ(fake.state().visibility_changes.size(), 2u);
}

TEST_F(SqsActions, ChangeMessageVisibilityBatchAnswersEachEntry) {
    auto handles = received_handles({"one", "two"});
    ASSERT_EQ(handles.size(), 2u);
    auto res = json_call("ChangeMessageVisibilityBatch",
                         R"({"QueueUrl":")" + url("orders") + R"(","Entries":[)"
                         R"({"Id":"a","ReceiptHandle":")" + handles[0] + R"(","VisibilityTimeout":60},)"
                         R"({"Id":"b","ReceiptHandle":"forged","VisibilityTimeout":60}]})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    ASSERT_EQ(doc["Successful"].Size(), 1u);
    EXPECT_EQ(json::as_view(doc["Successful"][0]["Id"]), "a");
    ASSERT_EQ(doc["Failed"].Size(), 1u);
    EXPECT_EQ(json::as_view(doc["Failed"][0]["Code"]), "ReceiptHandleIsInvalid");
    EXPECT_EQ(fake.state().visibility_changes.at(0).second.timeout, std::chrono::seconds(60));
}

// --- attributes --------------------------------------------------------------------------------

TEST_F(SqsActions, GetQueueAttributesAsksForTheNamedOnes) {
    auto res = json_call("GetQueueAttributes",
                         R"({"QueueUrl":")" + url("orders") +
                             R"(","AttributeNames":["QueueArn","ApproximateNumberOfMessages"]})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    auto doc = testing::parse_json(res.body());
    EXPECT_EQ(json::as_view(doc["Attributes"]["QueueArn"]),
              "arn:aws:sqs:us-east-1:000000000000:orders");
    EXPECT_EQ(json::as_view(doc["Attributes"]["ApproximateNumberOfMessages"]), "0");
    EXPECT_EQ(fake.script().args_of(fake_call::get_attributes),
              std::vector<std::string>{"orders QueueArn ApproximateNumberOfMessages"});
    res = query_call("GetQueueAttributes",
                     "QueueUrl=" + url("orders") + "&AttributeName.1=Bogus");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_NE(res.body().find("<Code>InvalidAttributeName</Code>"), std::string::npos)
        << res.body();
}

TEST_F(SqsActions, SetQueueAttributesForwardsAndMapsRefusals) {
    auto res = query_call("SetQueueAttributes", "QueueUrl=" + url("orders") +
                                                    "&Attribute.1.Name=VisibilityTimeout"
                                                    "&Attribute.1.Value=45");
    EXPECT_EQ(res.result_int(), 200) << res.body();
    EXPECT_EQ(fake.state().queues.at(api::queue_name("orders")).attributes.at("VisibilityTimeout"),
              "45");
    fake.script().fail_next(fake_call::set_attributes, api::errc::invalid_attribute_value,
                            "Invalid value for the parameter VisibilityTimeout.");
    res = json_call("SetQueueAttributes", R"({"QueueUrl":")" + url("orders") +
                                              R"(","Attributes":{"VisibilityTimeout":"-1"}})");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#InvalidAttributeValue");
    EXPECT_NE(res.body().find("VisibilityTimeout"), std::string::npos);
}

TEST_F(SqsActions, CreateQueueConflictsInBothProtocols) {
    fake.state().queues.at(api::queue_name("orders")).attributes["VisibilityTimeout"] = "30";
    auto res = json_call("CreateQueue",
                         R"({"QueueName":"orders","Attributes":{"VisibilityTimeout":"60"}})");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_EQ(json_type(res), "com.amazonaws.sqs#QueueNameExists");
    res = query_call("CreateQueue", "QueueName=orders&Attribute.1.Name=VisibilityTimeout"
                                    "&Attribute.1.Value=60");
    EXPECT_NE(res.body().find("<Code>QueueAlreadyExists</Code>"), std::string::npos)
        << res.body();
    res = json_call("CreateQueue", R"({"QueueName":"fresh"})");
    ASSERT_EQ(res.result_int(), 200) << res.body();
    EXPECT_EQ(json::as_view(testing::parse_json(res.body())["QueueUrl"]),
              "http://localhost:8082/000000000000/fresh");
}

TEST_F(SqsActions, UnknownAndMissingActions) {
    auto res = json_call("Frobnicate", "{}");
    EXPECT_EQ(res.result_int(), 400);
    EXPECT_EQ(json_type(res), "com.amazon.coral.service#UnknownOperationException");
    res = run(testing::make_request(verb::post, "/", "QueueUrl=x",
                                    "application/x-www-form-urlencoded"));
    EXPECT_NE(res.body().find("<Code>MissingAction</Code>"), std::string::npos) << res.body();
    EXPECT_TRUE(fake.script().calls().empty());
}

}  // namespace
}  // namespace sluice::gateway::sqs
