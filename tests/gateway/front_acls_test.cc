#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <unistd.h>

#include "gateway/policy/front_acls.h"

namespace sluice::gateway {
namespace {
using auth::acl_operation;
using auth::resource_type;
using boost::beast::http::verb;

acl_check topic(acl_operation op, std::string name) {
    return {op, resource_type::topic, std::move(name)};
}
acl_check group(acl_operation op, std::string name) {
    return {op, resource_type::group, std::move(name)};
}
acl_check cluster(acl_operation op) { return {op, resource_type::cluster, "kafka-cluster"}; }

param_list params(std::initializer_list<std::pair<std::string, std::string>> items) {
    param_list out;
    for (const auto& [k, v] : items) {
        out.add(k, v);
    }
    return out;
}

/// Who asks from 127.0.0.1 (or `address`) on the SQS front.
requester asker(std::string_view principal, const char* address = "127.0.0.1") {
    return requester{.front = policy_front::sqs,
                     .principal = principal,
                     .peer = {boost::asio::ip::make_address(address), 5555}};
}

TEST(FrontAcls, RestV2ProduceWritesAndMetadataDescribes) {
    const auto t = params({{"topic", "a"}});
    const param_list none;
    EXPECT_EQ(http_route_checks(verb::post, "/topics/{topic}", t, none),
              acl_checks{topic(acl_operation::write, "a")});
    EXPECT_EQ(http_route_checks(verb::post, "/topics/{topic}/partitions/{partition}",
                                params({{"topic", "a"}, {"partition", "0"}}), none),
              acl_checks{topic(acl_operation::write, "a")});
    EXPECT_EQ(http_route_checks(verb::get, "/topics/{topic}", t, none),
              acl_checks{topic(acl_operation::describe, "a")});
    EXPECT_EQ(http_route_checks(verb::head, "/topics/{topic}", t, none),
              acl_checks{topic(acl_operation::describe, "a")});
    EXPECT_EQ(http_route_checks(verb::get, "/topics/{topic}/partitions/{partition}/offsets",
                                params({{"topic", "a"}, {"partition", "0"}}), none),
              acl_checks{topic(acl_operation::describe, "a")});
    // Listings filter in their handlers.
    EXPECT_TRUE(http_route_checks(verb::get, "/topics", none, none).empty());
}

TEST(FrontAcls, RestV3ProduceWritesAndTopicsDescribe) {
    const auto t = params({{"cluster_id", "c"}, {"topic_name", "b"}});
    const param_list none;
    EXPECT_EQ(http_route_checks(verb::post, "/v3/clusters/{cluster_id}/topics/{topic_name}/records",
                                t, none),
              acl_checks{topic(acl_operation::write, "b")});
    EXPECT_EQ(http_route_checks(verb::post,
                                "/v3/clusters/{cluster_id}/topics/{topic_name}/records:batch", t,
                                none),
              acl_checks{topic(acl_operation::write, "b")});
    EXPECT_EQ(http_route_checks(verb::get, "/v3/clusters/{cluster_id}/topics/{topic_name}", t,
                                none),
              acl_checks{topic(acl_operation::describe, "b")});
    EXPECT_EQ(http_route_checks(verb::get,
                                "/v3/clusters/{cluster_id}/topics/{topic_name}/partitions", t,
                                none),
              acl_checks{topic(acl_operation::describe, "b")});
    EXPECT_TRUE(http_route_checks(verb::get, "/v3/clusters/{cluster_id}/topics",
                                  params({{"cluster_id", "c"}}), none)
                    .empty());
    EXPECT_TRUE(http_route_checks(verb::get, "/v3/clusters", none, none).empty());
}

TEST(FrontAcls, RestV3AdministrationAsksKafkasOperations) {
    const auto t = params({{"cluster_id", "c"}, {"topic_name", "b"}});
    const auto tc = params({{"cluster_id", "c"}, {"topic_name", "b"}, {"name", "retention.ms"}});
    const param_list none;
    const std::string topic_route = "/v3/clusters/{cluster_id}/topics/{topic_name}";
    EXPECT_EQ(http_route_checks(verb::delete_, topic_route, t, none),
              acl_checks{topic(acl_operation::remove, "b")});
    EXPECT_EQ(http_route_checks(verb::patch, topic_route, t, none),
              acl_checks{topic(acl_operation::alter, "b")});
    EXPECT_EQ(http_route_checks(verb::get, topic_route + "/configs", t, none),
              acl_checks{topic(acl_operation::describe_configs, "b")});
    EXPECT_EQ(http_route_checks(verb::get, topic_route + "/configs/{name}", tc, none),
              acl_checks{topic(acl_operation::describe_configs, "b")});
    EXPECT_EQ(http_route_checks(verb::put, topic_route + "/configs/{name}", tc, none),
              acl_checks{topic(acl_operation::alter_configs, "b")});
    EXPECT_EQ(http_route_checks(verb::delete_, topic_route + "/configs/{name}", tc, none),
              acl_checks{topic(acl_operation::alter_configs, "b")});
    EXPECT_EQ(http_route_checks(verb::post, topic_route + "/configs:alter", t, none),
              acl_checks{topic(acl_operation::alter_configs, "b")});
    EXPECT_EQ(http_route_checks(verb::get,
                                "/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}/lags",
                                params({{"cluster_id", "c"}, {"consumer_group_id", "g"}}), none),
              acl_checks{group(acl_operation::describe, "g")});
    EXPECT_EQ(http_route_checks(verb::get, "/v3/clusters/{cluster_id}/brokers/{broker_id}/configs",
                                params({{"cluster_id", "c"}, {"broker_id", "0"}}), none),
              acl_checks{cluster(acl_operation::describe_configs)});
    // Creating checks CREATE in the handler (the cluster's, else the topic's); listings filter.
    EXPECT_TRUE(http_route_checks(verb::post, "/v3/clusters/{cluster_id}/topics",
                                  params({{"cluster_id", "c"}}), none)
                    .empty());
    EXPECT_TRUE(http_route_checks(verb::get, "/v3/clusters/{cluster_id}/consumer-groups",
                                  params({{"cluster_id", "c"}}), none)
                    .empty());
}

TEST(FrontAcls, RestV3AclsAndBrokerConfigsAskTheClustersOperations) {
    const auto c = params({{"cluster_id", "c"}});
    const auto b = params({{"cluster_id", "c"}, {"broker_id", "0"}, {"name", "log.retention.ms"}});
    const auto n = params({{"cluster_id", "c"}, {"name", "log.retention.ms"}});
    const param_list none;
    // Kafka's DescribeAcls (DESCRIBE) and CreateAcls / DeleteAcls (ALTER) on the cluster.
    const std::string acls = "/v3/clusters/{cluster_id}/acls";
    EXPECT_EQ(http_route_checks(verb::get, acls, c, none),
              acl_checks{cluster(acl_operation::describe)});
    EXPECT_EQ(http_route_checks(verb::post, acls, c, none),
              acl_checks{cluster(acl_operation::alter)});
    EXPECT_EQ(http_route_checks(verb::post, acls + ":batch", c, none),
              acl_checks{cluster(acl_operation::alter)});
    EXPECT_EQ(http_route_checks(verb::delete_, acls, c, none),
              acl_checks{cluster(acl_operation::alter)});
    // DescribeConfigs / IncrementalAlterConfigs on BROKER resources.
    const std::string broker = "/v3/clusters/{cluster_id}/brokers/{broker_id}/configs";
    for (const auto& [method, route, p] :
         {std::tuple{verb::get, broker + "/{name}", b},
          std::tuple{verb::get, std::string("/v3/clusters/{cluster_id}/brokers/-/configs"), c},
          std::tuple{verb::get, std::string("/v3/clusters/{cluster_id}/broker-configs"), c},
          std::tuple{verb::get, std::string("/v3/clusters/{cluster_id}/broker-configs/{name}"),
                     n}}) {
        EXPECT_EQ(http_route_checks(method, route, p, none),
                  acl_checks{cluster(acl_operation::describe_configs)})
            << route;
    }
    for (const auto& [method, route, p] :
         {std::tuple{verb::put, broker + "/{name}", b},
          std::tuple{verb::delete_, broker + "/{name}", b},
          std::tuple{verb::post, broker + ":alter", b},
          std::tuple{verb::put, std::string("/v3/clusters/{cluster_id}/broker-configs/{name}"), n},
          std::tuple{verb::delete_, std::string("/v3/clusters/{cluster_id}/broker-configs/{name}"),
                     n},
          std::tuple{verb::post, std::string("/v3/clusters/{cluster_id}/broker-configs:alter"),
                     c}}) {
        EXPECT_EQ(http_route_checks(method, route, p, none),
                  acl_checks{cluster(acl_operation::alter_configs)})
            << route;
    }
}

TEST(FrontAcls, SseReadsTopicAndGroup) {
    EXPECT_EQ(http_route_checks(verb::get, "/topics/{topic}/events", params({{"topic", "b"}}),
                                param_list{}),
              acl_checks{topic(acl_operation::read, "b")});
    EXPECT_EQ(http_route_checks(verb::get, "/v3/clusters/{cluster_id}/topics/{topic_name}/events",
                                params({{"cluster_id", "c"}, {"topic_name", "b"}}),
                                params({{"group", "g"}})),
              (acl_checks{topic(acl_operation::read, "b"), group(acl_operation::read, "g")}));
}

TEST(FrontAcls, ConsumerInstancesReadTheirGroup) {
    const auto g = params({{"group", "g"}, {"instance", "i"}});
    const param_list none;
    EXPECT_EQ(http_route_checks(verb::post, "/consumers/{group}", params({{"group", "g"}}), none),
              acl_checks{group(acl_operation::read, "g")});
    EXPECT_EQ(http_route_checks(verb::get, "/consumers/{group}/instances/{instance}/records", g,
                                none),
              acl_checks{group(acl_operation::read, "g")});
    EXPECT_EQ(http_route_checks(verb::post, "/consumers/{group}/instances/{instance}/offsets", g,
                                none),
              acl_checks{group(acl_operation::read, "g")});
    EXPECT_EQ(http_route_checks(verb::get, "/consumers/{group}/instances/{instance}/offsets", g,
                                none),
              acl_checks{group(acl_operation::describe, "g")});
}

TEST(FrontAcls, ConsoleViews) {
    const param_list none;
    // The listings filter what they show instead.
    EXPECT_EQ(http_route_checks(verb::get, "/v1/groups", none, none), acl_checks{});
    EXPECT_EQ(http_route_checks(verb::get, "/v1/groups/{path...}", params({{"path", "my%20g/x"}}),
                                none),
              acl_checks{group(acl_operation::describe, "my g")});
    EXPECT_EQ(http_route_checks(verb::get, "/v1/queues", none, none), acl_checks{});
    EXPECT_EQ(http_route_checks(verb::get, "/v1/queues/{queue}", params({{"queue", "q"}}), none),
              acl_checks{topic(acl_operation::describe, "q")});
    EXPECT_EQ(http_route_checks(verb::post, "/v1/queues/{queue}/redrive",
                                params({{"queue", "q"}}), none),
              acl_checks{topic(acl_operation::alter, "q")});
}

TEST(FrontAcls, ConsoleActionsAskKafkasOperation) {
    const param_list none;
    const auto g = params({{"group", "my%20g"}});
    // Resetting offsets is Kafka's OffsetCommit (READ on the group; the topic's READ is the
    // route's own), deleting a group DELETE on it, purging a queue DELETE on its topic.
    EXPECT_EQ(http_route_checks(verb::post, "/v1/console/groups/{group}/reset-offsets", g, none),
              acl_checks{group(acl_operation::read, "my g")});
    EXPECT_EQ(http_route_checks(verb::delete_, "/v1/console/groups/{group}", g, none),
              acl_checks{group(acl_operation::remove, "my g")});
    EXPECT_EQ(http_route_checks(verb::post, "/v1/console/queues/{queue}/purge",
                                params({{"queue", "q"}}), none),
              acl_checks{topic(acl_operation::remove, "q")});
    // The overview names no resource.
    EXPECT_TRUE(http_route_checks(verb::get, "/v1/console/overview", none, none).empty());
    // The users: DescribeUserScramCredentials (DESCRIBE) and AlterUserScramCredentials (ALTER)
    // on the cluster.
    EXPECT_EQ(http_route_checks(verb::get, "/v1/console/users", none, none),
              acl_checks{cluster(acl_operation::describe)});
    EXPECT_EQ(http_route_checks(verb::post, "/v1/console/users", none, none),
              acl_checks{cluster(acl_operation::alter)});
    const auto u = params({{"user", "carol"}});
    EXPECT_EQ(http_route_checks(verb::put, "/v1/console/users/{user}", u, none),
              acl_checks{cluster(acl_operation::alter)});
    EXPECT_EQ(http_route_checks(verb::delete_, "/v1/console/users/{user}", u, none),
              acl_checks{cluster(acl_operation::alter)});
}

TEST(FrontAcls, OpenRoutesNeedNothing) {
    const param_list none;
    for (const char* p : {"/healthz", "/readyz", "/ui", "/", "/ws", "/brokers"}) {
        EXPECT_TRUE(http_route_checks(verb::get, p, none, none).empty()) << p;
    }
}

TEST(FrontAcls, MetricsAreTheClustersView) {
    const param_list none;
    EXPECT_EQ(http_route_checks(verb::get, "/metrics", none, none),
              acl_checks{cluster(acl_operation::describe)});
}

TEST(FrontAcls, SqsMessagesMapOntoTopicAndGroup) {
    EXPECT_EQ(sqs_action_checks("SendMessage", "q"), acl_checks{topic(acl_operation::write, "q")});
    EXPECT_EQ(sqs_action_checks("SendMessageBatch", "q"),
              acl_checks{topic(acl_operation::write, "q")});
    EXPECT_EQ(sqs_action_checks("ReceiveMessage", "q"),
              (acl_checks{topic(acl_operation::read, "q"), group(acl_operation::read, "q")}));
    for (const char* a : {"DeleteMessage", "DeleteMessageBatch", "ChangeMessageVisibility",
                          "ChangeMessageVisibilityBatch"}) {
        EXPECT_EQ(sqs_action_checks(a, "q"), acl_checks{group(acl_operation::read, "q")}) << a;
    }
}

TEST(FrontAcls, SqsQueueActions) {
    EXPECT_EQ(sqs_action_checks("CreateQueue", "q"), acl_checks{topic(acl_operation::create, "q")});
    EXPECT_EQ(sqs_action_checks("DeleteQueue", "q"), acl_checks{topic(acl_operation::remove, "q")});
    EXPECT_EQ(sqs_action_checks("PurgeQueue", "q"), acl_checks{topic(acl_operation::remove, "q")});
    EXPECT_EQ(sqs_action_checks("GetQueueUrl", "q"),
              acl_checks{topic(acl_operation::describe, "q")});
    EXPECT_EQ(sqs_action_checks("GetQueueAttributes", "q"),
              acl_checks{topic(acl_operation::describe, "q")});
    EXPECT_EQ(sqs_action_checks("SetQueueAttributes", "q"),
              acl_checks{topic(acl_operation::alter_configs, "q")});
    EXPECT_EQ(sqs_action_checks("TagQueue", "q"),
              acl_checks{topic(acl_operation::alter_configs, "q")});
    EXPECT_EQ(sqs_action_checks("ListQueueTags", "q"),
              acl_checks{topic(acl_operation::describe, "q")});
    EXPECT_EQ(sqs_action_checks("StartMessageMoveTask", "q"),
              acl_checks{topic(acl_operation::alter, "q")});
    EXPECT_EQ(sqs_action_checks("CancelMessageMoveTask", ""),
              acl_checks{cluster(acl_operation::alter)});
    EXPECT_TRUE(sqs_action_checks("ListQueues", "").empty());
    EXPECT_TRUE(sqs_action_checks("NoSuchAction", "q").empty());
}

TEST(FrontAcls, SqsMoveTaskDestinationNeedsWrite) {
    EXPECT_EQ(sqs_move_destination_checks("arn:aws:sqs:us-east-1:000000000000:dest"),
              acl_checks{topic(acl_operation::write, "dest")});
}

TEST(FrontAcls, SqsMoveTaskNeedsAlterOnItsSourceAndWriteOnItsDestination) {
    EXPECT_EQ(sqs_move_task_checks("dlq", std::nullopt, {}),
              acl_checks{topic(acl_operation::alter, "dlq")});
    EXPECT_EQ(sqs_move_task_checks("dlq", std::string(), {}),
              acl_checks{topic(acl_operation::alter, "dlq")});
    EXPECT_EQ(sqs_move_task_checks("dlq", "arn:aws:sqs:us-east-1:000000000000:dest", {"src"}),
              (acl_checks{topic(acl_operation::alter, "dlq"),
                          topic(acl_operation::write, "dest")}));
}

TEST(FrontAcls, SqsMoveTaskBackToItsSourcesNeedsWriteOnEachOfThem) {
    EXPECT_EQ(sqs_move_task_checks("dlq", std::nullopt, {"s1", "s2"}),
              (acl_checks{topic(acl_operation::alter, "dlq"), topic(acl_operation::write, "s1"),
                          topic(acl_operation::write, "s2")}));
}

TEST(FrontAcls, SqsRedrivePolicyNeedsWriteOnItsDeadLetterQueue) {
    EXPECT_EQ(sqs_redrive_policy_checks(
                  R"({"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq",)"
                  R"("maxReceiveCount":"2"})"),
              acl_checks{topic(acl_operation::write, "dlq")});
    // A repeated key: every target named is checked, whichever one the parser keeps.
    EXPECT_EQ(sqs_redrive_policy_checks(R"({"deadLetterTargetArn":"arn:aws:sqs:r:1:a",)"
                                        R"("deadLetterTargetArn":"arn:aws:sqs:r:1:b"})"),
              (acl_checks{topic(acl_operation::write, "a"), topic(acl_operation::write, "b")}));
    EXPECT_TRUE(sqs_redrive_policy_checks("").empty());
    EXPECT_TRUE(sqs_redrive_policy_checks("{not json").empty());
    EXPECT_TRUE(sqs_redrive_policy_checks(R"({"deadLetterTargetArn":5})").empty());
}

TEST(FrontAcls, SqsQueueNamesFromParameters) {
    EXPECT_EQ(sqs_queue_parameter("SendMessage"), "QueueUrl");
    EXPECT_EQ(sqs_queue_parameter("CreateQueue"), "QueueName");
    EXPECT_EQ(sqs_queue_parameter("GetQueueUrl"), "QueueName");
    EXPECT_EQ(sqs_queue_parameter("StartMessageMoveTask"), "SourceArn");
    EXPECT_EQ(sqs_queue_parameter("ListQueues"), "");
    EXPECT_EQ(sqs_queue_of("QueueUrl", "http://127.0.0.1:9324/000000000000/orders?x=1"), "orders");
    EXPECT_EQ(sqs_queue_of("QueueUrl", "orders"), "orders");
    EXPECT_EQ(sqs_queue_of("SourceArn", "arn:aws:sqs:us-east-1:000000000000:dlq"), "dlq");
    EXPECT_EQ(sqs_queue_of("QueueName", "q.fifo"), "q.fifo");
}

TEST(FrontAcls, WebSocketOps) {
    EXPECT_EQ(subscribe_checks("b", ""), acl_checks{topic(acl_operation::read, "b")});
    EXPECT_EQ(subscribe_checks("b", "g"),
              (acl_checks{topic(acl_operation::read, "b"), group(acl_operation::read, "g")}));
    EXPECT_EQ(produce_checks("a"), acl_checks{topic(acl_operation::write, "a")});
}

TEST(FrontAcls, ConsumerOffsetsReadOrDescribeEachTopicNamed) {
    const std::vector<std::string> topics{"a", "b"};
    EXPECT_EQ(consumer_offsets_checks(verb::post, topics),
              (acl_checks{topic(acl_operation::read, "a"), topic(acl_operation::read, "b")}));
    EXPECT_EQ(consumer_offsets_checks(verb::get, topics),
              (acl_checks{topic(acl_operation::describe, "a"),
                          topic(acl_operation::describe, "b")}));
    EXPECT_TRUE(consumer_offsets_checks(verb::post, {}).empty());
}

TEST(FrontAcls, DenialMessagesNameTheOperation) {
    EXPECT_EQ(denial_message(topic(acl_operation::write, "a")), "Not authorized to WRITE topic a.");
    EXPECT_EQ(denial_message(group(acl_operation::read, "g")), "Not authorized to READ group g.");
    EXPECT_EQ(denial_message(cluster(acl_operation::describe)),
              "Not authorized to DESCRIBE the cluster.");
}

TEST(FrontAcls, WithoutAnAuthorizerEverythingPasses) {
    const policy_chain off;
    EXPECT_FALSE(off.authorizing());
    EXPECT_FALSE(refused_check(off, asker("User:alice"), "SendMessage",
                               sqs_action_checks("SendMessage", "q")));
    EXPECT_TRUE(off.visible(asker("User:alice"), acl_operation::write, resource_type::topic, "q"));
}

/// An authorizer over an ACL file written here (the format of auth/authorizer.h).
struct acl_file {
    std::filesystem::path path = std::filesystem::temp_directory_path() /
                                 ("front-acls-" + std::to_string(::getpid()));
    explicit acl_file(const std::string& lines) {
        std::ofstream(path) << "sluice-acls 1\n" << lines;
    }
    ~acl_file() { std::filesystem::remove(path); }
};

TEST(FrontAcls, ChecksGoToTheAuthorizerAndTheFirstDenialComesBack) {
    const acl_file f("acl topic literal allow write User:alice * a\n"
                     "acl topic literal allow read User:alice * b\n"
                     "acl group literal allow read User:alice * b\n");
    auth::authorizer_settings s;
    s.enabled = true;
    s.super_users = {"User:admin"};
    const auth::authorizer a(s, f.path);
    const policy_chain acl(&a, nullptr);
    EXPECT_TRUE(acl.authorizing());
    const auto alice = asker("User:alice");
    EXPECT_FALSE(refused_check(acl, alice, "SendMessage", sqs_action_checks("SendMessage", "a")));
    EXPECT_FALSE(refused_check(acl, alice, "ReceiveMessage",
                               sqs_action_checks("ReceiveMessage", "b")));
    EXPECT_EQ(refused_check(acl, alice, "ReceiveMessage", sqs_action_checks("ReceiveMessage", "a")),
              topic(acl_operation::read, "a"));
    // READ implies DESCRIBE: GetQueueAttributes on b passes, on c (no ACL) it does not.
    const auto alice6 = asker("User:alice", "::1");
    EXPECT_FALSE(refused_check(acl, alice6, "GetQueueAttributes",
                               sqs_action_checks("GetQueueAttributes", "b")));
    EXPECT_TRUE(refused_check(acl, alice6, "GetQueueAttributes",
                              sqs_action_checks("GetQueueAttributes", "c")));
    EXPECT_FALSE(refused_check(acl, asker("User:admin", "::1"), "DeleteQueue",
                               sqs_action_checks("DeleteQueue", "c")));
}

TEST(FrontAcls, AnAuthorizerThatIsOffIsNotAsked) {
    const acl_file f("");
    const auth::authorizer a(auth::authorizer_settings{}, f.path);
    const policy_chain acl(&a, nullptr);
    EXPECT_FALSE(acl.authorizing());
    EXPECT_FALSE(refused_check(acl, asker("User:alice", "::1"), "DeleteQueue",
                               sqs_action_checks("DeleteQueue", "c")));
}

TEST(FrontAcls, HttpRoutesAreFrontsOfTheChain) {
    EXPECT_EQ(http_route_front("/ws"), policy_front::websocket);
    EXPECT_EQ(http_route_front("/topics/{topic}/events"), policy_front::sse);
    EXPECT_EQ(http_route_front("/v1/queues/{queue}"), policy_front::console);
    EXPECT_EQ(http_route_front("/topics/{topic}"), policy_front::rest);
}

}  // namespace
}  // namespace sluice::gateway
