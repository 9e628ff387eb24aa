// CreatePartitions: grow a topic's partition count (validate_only supported). Needs ALTER on
// each topic, checked after the duplicate check and before the topic is looked up (as Kafka).
#include <set>

#include "backend/api/topics.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

/// ALTER on each topic, in request order; a repeated topic (refused as INVALID_REQUEST before
/// any check) keeps its place unchecked.
void create_partitions_handler::declare(std::int16_t, const request& req, access_list& out) {
    std::set<std::string_view> seen;
    for (const auto& t : req.topics) {
        if (seen.insert(t.name).second) {
            out.add(auth::acl_operation::alter, auth::resource_type::topic, t.name);
        } else {
            out.add_none();
        }
    }
}

boost::asio::awaitable<create_partitions_handler::response> create_partitions_handler::handle(
    request_context& ctx, request req) {
    auto& svc = ctx.svc();
    response resp;
    std::set<std::string> seen;
    for (std::size_t ti = 0; ti < req.topics.size(); ++ti) {
        const auto& t = req.topics[ti];
        auto& out = resp.results.emplace_back();
        out.name = t.name;
        out.error_code = kafka::error_code::none;
        if (!seen.insert(t.name).second) {
            out.error_code = kafka::error_code::invalid_request;
            out.error_message = "topic '" + t.name + "' appears more than once";
            continue;
        }
        if (ctx.verdicts().denied(ti)) {
            out.error_code = kafka::error_code::topic_authorization_failed;
            out.error_message = "not authorized to alter topic '" + t.name + "'";
            continue;
        }
        auto info = co_await svc.topics.describe(topic_name(t.name));
        if (!info) {
            out.error_code = kafka::error_code::unknown_topic_or_partition;
            out.error_message = "unknown topic '" + t.name + "'";
            continue;
        }
        if (t.count <= info->partitions) {
            out.error_code = kafka::error_code::invalid_partitions;
            out.error_message = "topic '" + t.name + "' has " + std::to_string(info->partitions) +
                                " partitions; the new count must be larger";
            continue;
        }
        if (t.assignments) {
            bool ok = t.assignments->size() ==
                      static_cast<std::size_t>(t.count - info->partitions);
            for (const auto& a : *t.assignments) {
                ok = ok && a.broker_ids.size() == 1 && a.broker_ids[0].value == svc.kafka.node_id;
            }
            if (!ok) {
                out.error_code = kafka::error_code::invalid_replica_assignment;
                out.error_message = "each new partition must be assigned to broker " +
                                    std::to_string(svc.kafka.node_id) + " only";
                continue;
            }
        }
        if (req.validate_only) {
            continue;
        }
        auto grown = co_await svc.topics.create_partitions(info->name, t.count, false);
        if (!grown) {
            out.error_code = to_kafka(grown.error().code);
            out.error_message = grown.error().message;
            continue;
        }
        kafka_log().info("topic '{}' grown to {} partitions by client '{}'", t.name, t.count,
                         ctx.client_id());
    }
    co_return resp;
}

}  // namespace sluice::gateway
