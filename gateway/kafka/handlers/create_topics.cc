// CreateTopics: new topics with partition counts and configs (validate_only supported).
// Single node: the replication factor must be 1 (or -1 for the default), as a one-broker Kafka
// cluster requires; manual assignments may only name this broker.
#include <map>
#include <set>

#include "backend/api/topics.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

/// CREATE on each topic, in request order, also passing with CREATE on the cluster (Kafka's
/// rule). A topic named twice (INVALID_REQUEST before any check) keeps its place (add_none).
void create_topics_handler::declare(std::int16_t, const request& req, access_list& out) {
    std::map<std::string_view, int> times;
    for (const auto& t : req.topics) {
        ++times[t.name];
    }
    for (const auto& t : req.topics) {
        if (times[t.name] > 1) {
            out.add_none();
            continue;
        }
        out.add(auth::acl_operation::create, auth::resource_type::topic, t.name,
                on_denial::refuse, also_passes::cluster);
    }
}

boost::asio::awaitable<create_topics_handler::response> create_topics_handler::handle(
    request_context& ctx, request req) {
    auto& svc = ctx.svc();
    const std::int16_t version = ctx.version();
    response resp;
    std::set<std::string> seen;
    std::set<std::string> duplicated;
    for (const auto& t : req.topics) {
        if (!seen.insert(t.name).second) {
            duplicated.insert(t.name);
        }
    }
    for (std::size_t ti = 0; ti < req.topics.size(); ++ti) {
        const auto& t = req.topics[ti];
        auto& out = resp.topics.emplace_back();
        out.name = t.name;
        out.error_code = kafka::error_code::none;
        auto refuse = [&](kafka::error_code code, std::string message) {
            out.error_code = code;
            out.error_message = std::move(message);
        };
        if (duplicated.contains(t.name)) {
            refuse(kafka::error_code::invalid_request,
                   "topic '" + t.name + "' appears more than once in the request");
            continue;
        }
        if (ctx.verdicts().denied(ti)) {
            refuse(kafka::error_code::topic_authorization_failed,
                   "CREATE on the cluster or on topic '" + t.name + "' is needed");
            continue;
        }
        std::int32_t partitions = t.num_partitions;
        if (!t.assignments.empty()) {
            if (partitions != -1 || t.replication_factor != -1) {
                refuse(kafka::error_code::invalid_request,
                       "give either assignments or num_partitions/replication_factor");
                continue;
            }
            bool ok = true;
            for (std::size_t i = 0; i < t.assignments.size(); ++i) {
                const auto& a = t.assignments[i];
                if (a.partition_index.value != static_cast<std::int32_t>(i) ||
                    a.broker_ids.size() != 1 || a.broker_ids[0].value != svc.kafka.node_id) {
                    ok = false;
                }
            }
            if (!ok) {
                refuse(kafka::error_code::invalid_replica_assignment,
                       "assignments must list partitions 0..n-1, each on broker " +
                           std::to_string(svc.kafka.node_id) + " only");
                continue;
            }
            partitions = static_cast<std::int32_t>(t.assignments.size());
        }
        if (partitions == -1) {
            partitions = svc.kafka.num_partitions;
        }
        if (partitions <= 0) {
            refuse(kafka::error_code::invalid_partitions,
                   "number of partitions must be larger than 0");
            continue;
        }
        if (t.replication_factor != -1 && t.replication_factor != 1 && t.assignments.empty()) {
            refuse(kafka::error_code::invalid_replication_factor,
                   "replication factor " + std::to_string(t.replication_factor) +
                       " is larger than the number of brokers (1)");
            continue;
        }
        api::new_topic spec;
        spec.name = topic_name(t.name);
        spec.partitions = partitions;
        spec.validate_only = req.validate_only;
        for (const auto& c : t.configs) {
            if (c.value) {
                spec.configs[c.name] = *c.value;
            }
        }
        auto created = co_await svc.topics.create(std::move(spec));
        if (!created) {
            refuse(to_kafka(created.error().code), created.error().message);
            continue;
        }
        if (!req.validate_only) {
            kafka_log().info("created topic '{}' ({} partitions) for client '{}'", t.name,
                             partitions, ctx.client_id());
        }
        out.topic_id = created->topic.id;
        out.num_partitions = created->topic.partitions;
        out.replication_factor = 1;
        if (version >= 5) {
            auto& configs = out.configs.emplace();
            for (const auto& e : created->configs) {
                configs.push_back(
                    {e.name, e.value, e.read_only, static_cast<std::int8_t>(e.source), false, {}});
            }
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
