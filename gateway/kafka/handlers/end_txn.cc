// EndTxn: commits or aborts the producer's ongoing transaction. Answered once the markers are
// in every partition of the transaction. v5 (KIP-890 transaction version 2) bumps the epoch
// and returns the producer id and epoch for the next transaction.
#include "backend/api/transactions.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/handlers/txn_support.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

/// WRITE on the transactional id.
void end_txn_handler::declare(std::int16_t, const request& req, access_list& out) {
    out.add(auth::acl_operation::write, auth::resource_type::transactional_id,
            req.transactional_id);
}

boost::asio::awaitable<end_txn_handler::response> end_txn_handler::handle(request_context& ctx,
                                                                          request req) {
    response resp;
    resp.producer_id = no_producer_id;
    resp.producer_epoch = no_producer_epoch;
    const bool tv2 = ctx.version() >= 5;
    if (ctx.verdicts().denied(0)) {
        resp.error_code = kafka::error_code::transactional_id_authorization_failed;
        co_return resp;
    }
    auto got = co_await ctx.svc().txn.end_txn(transactional_id(req.transactional_id),
                                              {req.producer_id, req.producer_epoch},
                                              req.committed, tv2);
    if (!got) {
        resp.error_code = txn_error(got.error(), ctx.version(), 2, 4);
        kafka_log().debug("conn {} client '{}': EndTxn v{} '{}' ({}) failed: {}",
                          ctx.connection().id, ctx.client_id(), ctx.version(),
                          req.transactional_id, req.committed ? "commit" : "abort",
                          got.error().code.message());
        co_return resp;
    }
    resp.error_code = kafka::error_code::none;
    if (tv2) {
        resp.producer_id = got->id;
        resp.producer_epoch = got->epoch;
    }
    co_return resp;
}

}  // namespace sluice::gateway
