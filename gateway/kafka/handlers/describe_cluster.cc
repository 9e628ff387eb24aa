// DescribeCluster: the cluster id and its one broker, which is also the controller.
#include "gateway/kafka/handlers/registry.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

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
        // Without ACLs every cluster operation is allowed: bits of Kafka's AclOperation codes
        // CREATE(5), ALTER(7), DESCRIBE(8), CLUSTER_ACTION(9), DESCRIBE_CONFIGS(10),
        // ALTER_CONFIGS(11), IDEMPOTENT_WRITE(12), CREATE_TOKENS(13), DESCRIBE_TOKENS(14).
        resp.cluster_authorized_operations = 0x7fa0;
    }
    co_return resp;
}

}  // namespace sluice::gateway
