// InitProducerId: a producer id and epoch for an idempotent producer, or the (fenced, bumped)
// epoch of a transactional id. Any broker answers (kafkajs sends the idempotent call to the
// controller); this one coordinates every transactional id.
#include "backend/api/transactions.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/handlers/txn_support.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

/// WRITE on the transactional id when there is one; without one, IDEMPOTENT_WRITE on the
/// cluster, also passing with WRITE on some topic (Kafka's rule). Nothing for an invalid
/// request.
void init_producer_id_handler::declare(std::int16_t, const request& req, access_list& out) {
    if (req.transactional_id &&
        (req.producer_id.value == -1) != (req.producer_epoch.value == -1)) {
        return;
    }
    if (req.transactional_id) {
        out.add(auth::acl_operation::write, auth::resource_type::transactional_id,
                *req.transactional_id);
        return;
    }
    out.add_cluster(auth::acl_operation::idempotent_write, on_denial::refuse,
                    also_passes::write_on_any_topic);
}

boost::asio::awaitable<init_producer_id_handler::response> init_producer_id_handler::handle(
    request_context& ctx, request req) {
    response resp;
    resp.producer_id = no_producer_id;
    resp.producer_epoch = no_producer_epoch;
    if (req.transactional_id &&
        (req.producer_id.value == -1) != (req.producer_epoch.value == -1)) {
        // compat: InitProducerIdRequest: an id without an epoch (or the reverse) is invalid.
        resp.error_code = kafka::error_code::invalid_request;
        co_return resp;
    }
    // The verdict (declare): on the transactional id, or without one on the cluster.
    if (req.transactional_id && ctx.verdicts().denied(0)) {
        resp.error_code = kafka::error_code::transactional_id_authorization_failed;
        co_return resp;
    }
    if (!req.transactional_id && ctx.verdicts().denied(0)) {
        resp.error_code = kafka::error_code::cluster_authorization_failed;
        co_return resp;
    }
    std::optional<transactional_id> id;
    if (req.transactional_id) {
        id = transactional_id(*req.transactional_id);
    }
    auto got = co_await ctx.svc().txn.init_producer_id(
        std::move(id), static_cast<std::int32_t>(req.transaction_timeout_ms.count()),
        {req.producer_id, req.producer_epoch});
    if (!got) {
        resp.error_code = txn_error(got.error(), ctx.version(), 4, 6);
        kafka_log().debug("conn {} client '{}': InitProducerId v{} ('{}') failed: {}",
                          ctx.connection().id, ctx.client_id(), ctx.version(),
                          req.transactional_id.value_or(""), got.error().code.message());
        co_return resp;
    }
    resp.error_code = kafka::error_code::none;
    resp.producer_id = got->id;
    resp.producer_epoch = got->epoch;
    co_return resp;
}

}  // namespace sluice::gateway
