// AddOffsetsToTxn: ties a consumer group to the producer's transaction, so that the offsets it
// then sends with TxnOffsetCommit commit or abort with the transaction.
#include "backend/api/transactions.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/handlers/txn_support.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

/// WRITE on the transactional id, then READ on the group; nothing for an empty group id (an
/// invalid request).
void add_offsets_to_txn_handler::declare(std::int16_t, const request& req, access_list& out) {
    if (req.group_id.empty()) {
        return;
    }
    const auto txn = out.add(auth::acl_operation::write, auth::resource_type::transactional_id,
                             req.transactional_id);
    out.add(auth::acl_operation::read, auth::resource_type::group, req.group_id);
    out.only_if(txn);
}

boost::asio::awaitable<add_offsets_to_txn_handler::response> add_offsets_to_txn_handler::handle(
    request_context& ctx, request req) {
    response resp;
    if (req.group_id.empty()) {
        resp.error_code = kafka::error_code::invalid_group_id;
        co_return resp;
    }
    if (ctx.verdicts().denied(0)) {
        resp.error_code = kafka::error_code::transactional_id_authorization_failed;
        co_return resp;
    }
    if (ctx.verdicts().denied(1)) {
        resp.error_code = kafka::error_code::group_authorization_failed;
        co_return resp;
    }
    auto added = co_await ctx.svc().txn.add_offsets(transactional_id(req.transactional_id),
                                                    {req.producer_id, req.producer_epoch},
                                                    group_id(req.group_id));
    resp.error_code = txn_error(backend::api::error_of(added), ctx.version(), 2, 4);
    co_return resp;
}

}  // namespace sluice::gateway
