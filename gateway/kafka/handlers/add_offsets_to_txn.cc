// AddOffsetsToTxn: ties a consumer group to the producer's transaction, so that the offsets it
// then sends with TxnOffsetCommit commit or abort with the transaction.
#include "backend/producer/transaction_coordinator.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/handlers/txn_support.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

boost::asio::awaitable<add_offsets_to_txn_handler::response> add_offsets_to_txn_handler::handle(
    request_context& ctx, request req) {
    response resp;
    if (!has_txn(ctx)) {
        resp.error_code = kafka::error_code::coordinator_not_available;
        co_return resp;
    }
    if (req.group_id.empty()) {
        resp.error_code = kafka::error_code::invalid_group_id;
        co_return resp;
    }
    auto ec = co_await ctx.svc().txn->add_offsets(req.transactional_id, req.producer_id.value,
                                                  req.producer_epoch.value, req.group_id);
    resp.error_code = txn_error(ec, ctx.version(), 2, 4);
    co_return resp;
}

}  // namespace sluice::gateway
