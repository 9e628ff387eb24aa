// InitProducerId: a producer id and epoch for an idempotent producer, or the (fenced, bumped)
// epoch of a transactional id. Any broker answers (kafkajs sends the idempotent call to the
// controller); this one coordinates every transactional id.
#include "backend/api/transactions.h"
#include "gateway/kafka/authz.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/handlers/txn_support.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

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
    // WRITE on the transactional id; without one, IDEMPOTENT_WRITE on the cluster or WRITE on
    // some topic.
    if (ctx.svc().authz.enabled()) {
        if (req.transactional_id) {
            if (!authorize(ctx, auth::acl_operation::write, auth::resource_type::transactional_id,
                           *req.transactional_id)) {
                resp.error_code = kafka::error_code::transactional_id_authorization_failed;
                co_return resp;
            }
        } else if (!authorized_quietly(ctx, auth::acl_operation::idempotent_write,
                                       auth::resource_type::cluster,
                                       auth::cluster_resource_name) &&
                   !ctx.svc().authz.allowed_any(ctx.principal(), client_host(ctx),
                                                auth::acl_operation::write,
                                                auth::resource_type::topic)) {
            audit_denied(ctx, auth::acl_operation::idempotent_write, auth::resource_type::cluster,
                         auth::cluster_resource_name);
            resp.error_code = kafka::error_code::cluster_authorization_failed;
            co_return resp;
        }
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
