#include "gateway/policy/front_acls.h"

#include <cctype>

#include <fmt/format.h>

#include "protocol/core/json.h"

namespace sluice::gateway {
using auth::acl_operation;
using auth::resource_type;
using boost::beast::http::verb;

namespace {

acl_check topic(acl_operation op, std::string_view name) {
    return acl_check{op, resource_type::topic, std::string(name)};
}
acl_check group(acl_operation op, std::string_view name) {
    return acl_check{op, resource_type::group, std::string(name)};
}
acl_check cluster(acl_operation op) {
    return acl_check{op, resource_type::cluster, std::string(auth::cluster_resource_name)};
}

std::string_view param(const param_list& params, std::string_view name) {
    return params.get(name).value_or(std::string_view());
}

}  // namespace

std::string denial_message(const acl_check& c) {
    if (c.type == resource_type::cluster) {
        return fmt::format("Not authorized to {} the cluster.", auth::to_string(c.op));
    }
    std::string type(auth::to_string(c.type));
    for (auto& ch : type) {
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    return fmt::format("Not authorized to {} {} {}.", auth::to_string(c.op), type, c.name);
}

access access_of(const acl_check& c, on_denial d) { return access{c.op, c.type, c.name, d}; }

std::vector<access> accesses_of(const acl_checks& checks, on_denial d) {
    std::vector<access> out;
    out.reserve(checks.size());
    for (const auto& c : checks) {
        out.push_back(access_of(c, d));
    }
    return out;
}

std::optional<acl_check> refused_check(const policy_chain& chain, const requester& who,
                                       std::string_view action, const acl_checks& checks) {
    if (!chain.authorizing() || checks.empty()) {
        return std::nullopt;
    }
    auto accesses = accesses_of(checks);
    request_facts facts{.who = who, .action = action, .accesses = accesses,
                        .all_or_nothing = true};
    const decision d = chain.decide(facts);
    if (d.first_denied == nullptr) {
        return std::nullopt;
    }
    return checks[static_cast<std::size_t>(d.first_denied - accesses.data())];
}

policy_front http_route_front(std::string_view pattern) {
    if (pattern == "/ws") {
        return policy_front::websocket;
    }
    if (pattern.ends_with("/events")) {
        return policy_front::sse;
    }
    return pattern.starts_with("/v1/") || pattern == "/v1" ? policy_front::console
                                                           : policy_front::rest;
}

acl_checks http_route_checks(verb method, std::string_view pattern, const param_list& params,
                             const param_list& query) {
    const bool get = method == verb::get || method == verb::head;
    // Every topic, group and queue by name, with their traffic: the cluster's view.
    if (pattern == "/metrics" || pattern == "/v1/console/partition-sizes") {
        return {cluster(acl_operation::describe)};
    }
    // REST Proxy v2 (produce, metadata) and SSE.
    if (pattern == "/topics/{topic}" || pattern == "/topics/{topic}/partitions/{partition}") {
        return {topic(get ? acl_operation::describe : acl_operation::write,
                      param(params, "topic"))};
    }
    if (pattern.starts_with("/topics/{topic}/partitions")) {
        return {topic(acl_operation::describe, param(params, "topic"))};
    }
    if (pattern == "/topics/{topic}/events" ||
        pattern == "/v3/clusters/{cluster_id}/topics/{topic_name}/events") {
        const auto t = param(params, pattern.starts_with("/v3") ? "topic_name" : "topic");
        return subscribe_checks(t, param(query, "group"));
    }
    // REST Proxy v3.
    if (pattern == "/v3/clusters/{cluster_id}/topics/{topic_name}/records" ||
        pattern == "/v3/clusters/{cluster_id}/topics/{topic_name}/records:batch") {
        return {topic(acl_operation::write, param(params, "topic_name"))};
    }
    // v3 administration: Kafka's operation for each (DeleteTopics, CreatePartitions,
    // DescribeConfigs, IncrementalAlterConfigs, DescribeGroups); POST .../topics checks its
    // CREATE in the handler (the cluster's, else the topic's).
    constexpr std::string_view v3_topic = "/v3/clusters/{cluster_id}/topics/{topic_name}";
    if (pattern == v3_topic && method == verb::delete_) {
        return {topic(acl_operation::remove, param(params, "topic_name"))};
    }
    if (pattern == v3_topic && method == verb::patch) {
        return {topic(acl_operation::alter, param(params, "topic_name"))};
    }
    if (pattern.starts_with(std::string(v3_topic) + "/configs") ||
        pattern == std::string(v3_topic) + "/default-configs") {
        return {topic(get ? acl_operation::describe_configs : acl_operation::alter_configs,
                      param(params, "topic_name"))};
    }
    if (pattern.starts_with(v3_topic)) {
        return {topic(acl_operation::describe, param(params, "topic_name"))};
    }
    if (pattern.starts_with("/v3/clusters/{cluster_id}/consumer-groups/{consumer_group_id}")) {
        return {group(acl_operation::describe, param(params, "consumer_group_id"))};
    }
    // ACLs: Kafka's DescribeAcls (DESCRIBE) and CreateAcls/DeleteAcls (ALTER) on the cluster.
    if (pattern == "/v3/clusters/{cluster_id}/acls" ||
        pattern == "/v3/clusters/{cluster_id}/acls:batch" ||
        pattern == "/v1/console/gateway-acls") {
        return {cluster(get ? acl_operation::describe : acl_operation::alter)};
    }
    // Broker configs (one broker's, every broker's, the cluster-wide defaults): Kafka's
    // DescribeConfigs / IncrementalAlterConfigs on a BROKER resource.
    if (pattern.starts_with("/v3/clusters/{cluster_id}/brokers/{broker_id}/configs") ||
        pattern == "/v3/clusters/{cluster_id}/brokers/-/configs" ||
        pattern.starts_with("/v3/clusters/{cluster_id}/broker-configs")) {
        return {cluster(get ? acl_operation::describe_configs : acl_operation::alter_configs)};
    }
    // Consumer instances: the group here, the topics in the handlers.
    if (pattern.starts_with("/consumers/{group}")) {
        const bool describe = get && pattern.ends_with("/offsets");
        return {group(describe ? acl_operation::describe : acl_operation::read,
                      param(params, "group"))};
    }
    // The console's views (the listings, /v1/groups and /v1/queues, filter in the handler).
    if (pattern == "/v1/groups/{path...}") {
        const auto raw = param(params, "path");
        const auto decoded = percent_decode(raw.substr(0, raw.find('/')));
        return {group(acl_operation::describe, decoded ? *decoded : std::string(raw))};
    }
    // The console's actions (ui_routes.h): Kafka's operation for each.
    if (pattern.starts_with("/v1/console/groups/{group}")) {
        const auto raw = param(params, "group");
        const auto decoded = percent_decode(raw);
        return {group(pattern.ends_with("/reset-offsets") ? acl_operation::read
                                                          : acl_operation::remove,
                      decoded ? *decoded : std::string(raw))};
    }
    // The SASL users: Kafka's DescribeUserScramCredentials (DESCRIBE) and
    // AlterUserScramCredentials (ALTER) on the cluster.
    if (pattern == "/v1/console/users" || pattern == "/v1/console/users/{user}") {
        return {cluster(get ? acl_operation::describe : acl_operation::alter)};
    }
    if (pattern == "/v1/console/queues/{queue}/purge") {
        return {topic(acl_operation::remove, param(params, "queue"))};
    }
    if (pattern == "/v1/queues/{queue}/redrive") {
        return {topic(acl_operation::alter, param(params, "queue"))};
    }
    if (pattern.starts_with("/v1/queues/{queue}")) {
        return {topic(acl_operation::describe, param(params, "queue"))};
    }
    return {};
}

std::string_view sqs_queue_parameter(std::string_view action) {
    if (action == "CreateQueue" || action == "GetQueueUrl") {
        return "QueueName";
    }
    if (action == "StartMessageMoveTask" || action == "ListMessageMoveTasks") {
        return "SourceArn";
    }
    if (action == "ListQueues" || action == "CancelMessageMoveTask") {
        return {};
    }
    return "QueueUrl";
}

std::string sqs_queue_of(std::string_view parameter, std::string_view value) {
    if (parameter == "QueueUrl") {
        value = value.substr(0, value.find('?'));
        const auto slash = value.rfind('/');
        return std::string(slash == std::string_view::npos ? value : value.substr(slash + 1));
    }
    if (parameter == "SourceArn") {
        const auto colon = value.rfind(':');
        return std::string(colon == std::string_view::npos ? value : value.substr(colon + 1));
    }
    return std::string(value);
}

acl_checks sqs_move_destination_checks(std::string_view destination_arn) {
    return {topic(acl_operation::write, sqs_queue_of("SourceArn", destination_arn))};
}

acl_checks sqs_move_task_checks(std::string_view source,
                                const std::optional<std::string>& destination_arn,
                                const std::vector<std::string>& return_queues) {
    auto checks = sqs_action_checks("StartMessageMoveTask", source);
    if (destination_arn && !destination_arn->empty()) {
        for (auto& c : sqs_move_destination_checks(*destination_arn)) {
            checks.push_back(std::move(c));
        }
        return checks;
    }
    for (const auto& q : return_queues) {
        checks.push_back(topic(acl_operation::write, q));
    }
    return checks;
}

acl_checks sqs_redrive_policy_checks(std::string_view redrive_policy) {
    rapidjson::Document doc;
    if (redrive_policy.empty() || !protocol::parse_json(doc, redrive_policy) || !doc.IsObject()) {
        return {};
    }
    acl_checks out;
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
        const std::string_view key(it->name.GetString(), it->name.GetStringLength());
        if (key == "deadLetterTargetArn" && it->value.IsString()) {
            const std::string_view arn(it->value.GetString(), it->value.GetStringLength());
            out.push_back(topic(acl_operation::write, sqs_queue_of("SourceArn", arn)));
        }
    }
    return out;
}

acl_checks sqs_action_checks(std::string_view action, std::string_view queue) {
    using op = acl_operation;
    if (action == "SendMessage" || action == "SendMessageBatch") {
        return {topic(op::write, queue)};
    }
    if (action == "ReceiveMessage") {
        return {topic(op::read, queue), group(op::read, queue)};
    }
    if (action == "DeleteMessage" || action == "DeleteMessageBatch" ||
        action == "ChangeMessageVisibility" || action == "ChangeMessageVisibilityBatch") {
        return {group(op::read, queue)};
    }
    if (action == "CreateQueue") {
        return {topic(op::create, queue)};  // CREATE on the cluster also passes (sqs_front)
    }
    if (action == "DeleteQueue" || action == "PurgeQueue") {
        return {topic(op::remove, queue)};
    }
    if (action == "GetQueueUrl" || action == "GetQueueAttributes" ||
        action == "ListQueueTags" || action == "ListDeadLetterSourceQueues" ||
        action == "ListMessageMoveTasks") {
        return {topic(op::describe, queue)};
    }
    if (action == "SetQueueAttributes" || action == "TagQueue" || action == "UntagQueue") {
        return {topic(op::alter_configs, queue)};
    }
    if (action == "AddPermission" || action == "RemovePermission" ||
        action == "StartMessageMoveTask") {
        return {topic(op::alter, queue)};
    }
    if (action == "CancelMessageMoveTask") {
        // The handle is a random id that names no queue: sqs_front checks the task's own queues
        // (sqs_move_task_checks) when the handle is a kept task's, and this for any other
        // handle, so an unknown handle still needs the cluster's ALTER (or a super user).
        return {cluster(op::alter)};
    }
    return {};
}

acl_checks subscribe_checks(std::string_view t, std::string_view g) {
    acl_checks out{topic(acl_operation::read, t)};
    if (!g.empty()) {
        out.push_back(group(acl_operation::read, g));
    }
    return out;
}

acl_checks produce_checks(std::string_view t) { return {topic(acl_operation::write, t)}; }

acl_checks consumer_offsets_checks(verb method, const std::vector<std::string>& topics) {
    const auto op = method == verb::post ? acl_operation::read : acl_operation::describe;
    acl_checks out;
    out.reserve(topics.size());
    for (const auto& t : topics) {
        out.push_back(topic(op, t));
    }
    return out;
}

}  // namespace sluice::gateway
