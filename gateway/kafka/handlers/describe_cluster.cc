// DescribeCluster: the cluster id and its one broker, which is also the controller. As on a
// Kafka broker it needs no ACL; the cluster's authorized operations are reported only to a
// principal with DESCRIBE on the cluster (0 to others).
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

/// Nothing, unless the client asks for the cluster's authorized operations: then DESCRIBE on
/// the cluster (a refusal is reported, and the operations answered are none). Nothing either
/// for an endpoint type that is refused before (v1+, not brokers).
void describe_cluster_handler::declare(std::int16_t version, const request& req,
                                       access_list& out) {
    if (version >= 1 && req.endpoint_type != 1) {
        return;
    }
    if (req.include_cluster_authorized_operations) {
        out.add_cluster(auth::acl_operation::describe);
    }
}

boost::asio::awaitable<describe_cluster_handler::response> describe_cluster_handler::handle(
    request_context& ctx, request req) {
    auto& svc = ctx.svc();
    response resp;
    resp.error_code = kafka::error_code::none;
    resp.endpoint_type = req.endpoint_type;
    if (ctx.version() >= 1 && req.endpoint_type != 1) {
        // compat: only broker endpoints exist here (KIP-919 controller endpoints do not).
        resp.error_code = kafka::error_code::unsupported_endpoint_type;
        resp.error_message = "only broker endpoints (type 1) are available";
        co_return resp;
    }
    resp.cluster_id = svc.kafka.cluster_id;
    resp.controller_id = node_id(svc.kafka.node_id);
    auto [host, port] = advertised_kafka_address(ctx);
    resp.brokers.push_back({node_id(svc.kafka.node_id), host, port, std::nullopt, false, {}});
    if (req.include_cluster_authorized_operations) {
        if (!policy_enabled(ctx)) {
            // Without an authorizer every cluster operation is allowed: bits of Kafka's
            // AclOperation codes CREATE(5), ALTER(7), DESCRIBE(8), CLUSTER_ACTION(9),
            // DESCRIBE_CONFIGS(10), ALTER_CONFIGS(11), IDEMPOTENT_WRITE(12), CREATE_TOKENS(13),
            // DESCRIBE_TOKENS(14).
            resp.cluster_authorized_operations = 0x7fa0;
        } else if (ctx.verdicts().allowed(0)) {
            resp.cluster_authorized_operations =
                authorized_operations(ctx, auth::resource_type::cluster,
                                      auth::cluster_resource_name, cluster_operations);
        } else {
            resp.cluster_authorized_operations = 0;
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
