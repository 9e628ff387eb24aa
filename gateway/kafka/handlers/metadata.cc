// Metadata: this broker (the only one: leader, controller and coordinator of everything) and
// the partitions of the requested topics, creating unknown topics when auto-creation is on.
// Authorization as Kafka: DESCRIBE on a topic to see it (absent from all-topics answers,
// TOPIC_AUTHORIZATION_FAILED when named), CREATE on the cluster or topic to auto-create it.
#include "backend/api/topics.h"
#include "gateway/kafka/authz.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/policy/topic_auto_create.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

namespace {

using topic_entry = metadata_handler::response::metadata_response_topic;

void fill_topic(topic_entry& t, const api::topic_description& info, node_id self) {
    t.error_code = kafka::error_code::none;
    t.name = info.name.value;
    t.topic_id = info.id;
    t.is_internal = info.internal;
    t.partitions.reserve(static_cast<std::size_t>(info.partitions));
    for (std::int32_t p = 0; p < info.partitions; ++p) {
        auto& part = t.partitions.emplace_back();
        part.error_code = kafka::error_code::none;
        part.partition_index = partition_id(p);
        part.leader_id = self;
        part.leader_epoch = 0;
        part.replica_nodes = {self};
        part.isr_nodes = {self};
    }
}

// Kafka's authorized operations, when the client asks for them (v8+): per answered topic, and
// for the cluster (v8-10) only to a principal with DESCRIBE on it, as KafkaApis does.
void add_authorized_operations(const request_context& ctx, const metadata_handler::request& req,
                               metadata_handler::response& resp) {
    if (req.include_topic_authorized_operations) {
        for (auto& t : resp.topics) {
            if (t.error_code == kafka::error_code::none && t.name) {
                t.topic_authorized_operations = authorized_operations(
                    ctx, auth::resource_type::topic, *t.name, topic_operations);
            }
        }
    }
    if (req.include_cluster_authorized_operations) {
        resp.cluster_authorized_operations =
            authorized_quietly(ctx, auth::acl_operation::describe, auth::resource_type::cluster,
                               auth::cluster_resource_name)
                ? authorized_operations(ctx, auth::resource_type::cluster,
                                        auth::cluster_resource_name, cluster_operations)
                : 0;
    }
}

}  // namespace

boost::asio::awaitable<metadata_handler::response> metadata_handler::handle(request_context& ctx,
                                                                            request req) {
    auto& svc = ctx.svc();
    const node_id self(svc.kafka.node_id);
    response resp;
    auto [host, port] = advertised_kafka_address(ctx);
    resp.brokers.push_back({self, host, port, std::nullopt, {}});
    resp.cluster_id = svc.kafka.cluster_id;
    resp.controller_id = self;

    // compat: v0 has no null list; an empty list there means every topic.
    const bool all_topics = !req.topics || (ctx.version() == 0 && req.topics->empty());
    if (all_topics) {
        for (const auto& info : co_await svc.topics.list()) {
            if (!authorized_quietly(ctx, auth::acl_operation::describe,
                                    auth::resource_type::topic, info.name.value)) {
                continue;
            }
            fill_topic(resp.topics.emplace_back(), info, self);
        }
        add_authorized_operations(ctx, req, resp);
        co_return resp;
    }

    // Auto-creation: asked for by the client (v4+; implied before) and allowed by the broker.
    const bool may_create = svc.kafka.auto_create_topics && req.allow_auto_topic_creation;
    for (const auto& wanted : *req.topics) {
        auto& t = resp.topics.emplace_back();
        std::optional<api::topic_description> info;
        if (!wanted.name && !wanted.topic_id.is_zero()) {
            info = co_await svc.topics.describe(wanted.topic_id);
            if (!info) {
                t.error_code = kafka::error_code::unknown_topic_id;
                t.topic_id = wanted.topic_id;
                t.name = std::nullopt;
                continue;
            }
            if (!authorize(ctx, auth::acl_operation::describe, auth::resource_type::topic,
                           info->name.value)) {
                t.error_code = kafka::error_code::topic_authorization_failed;
                t.topic_id = wanted.topic_id;
                t.name = std::nullopt;
                continue;
            }
        } else {
            const topic_name name(wanted.name.value_or(""));
            t.name = name.value;
            if (!authorize(ctx, auth::acl_operation::describe, auth::resource_type::topic,
                           name.value)) {
                t.error_code = kafka::error_code::topic_authorization_failed;
                continue;
            }
            info = co_await svc.topics.describe(name);
            if (!info && may_create && !authorize_create_topic(ctx, name.value)) {
                t.error_code = kafka::error_code::topic_authorization_failed;
                continue;
            }
            if (!info && may_create) {
                // The HTTP front's produce calls create topics through the same function.
                auto created = co_await auto_create_topic(
                    svc.topics, name, svc.kafka.num_partitions,
                    fmt::format("kafka client '{}'", ctx.client_id()));
                if (!created) {
                    t.error_code = to_kafka(created.error().code);
                    continue;
                }
                info = std::move(*created);
            }
            if (!info) {
                t.error_code = kafka::error_code::unknown_topic_or_partition;
                continue;
            }
        }
        fill_topic(t, *info, self);
    }
    add_authorized_operations(ctx, req, resp);
    co_return resp;
}

}  // namespace sluice::gateway
