// TxnOffsetCommit: consumed offsets that become the group's committed offsets only when the
// producer's transaction commits. The group coordinator checks the member and generation
// (v3+, KIP-447); the transaction coordinator keeps the offsets pending until EndTxn. v5
// (KIP-890) adds the group to the transaction when AddOffsetsToTxn was not sent.
#include "backend/log/log_manager.h"
#include "backend/producer/transaction_coordinator.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/handlers/txn_support.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace bp = backend::producer;

boost::asio::awaitable<txn_offset_commit_handler::response> txn_offset_commit_handler::handle(
    request_context& ctx, request req) {
    response resp;
    kafka::error_code common = kafka::error_code::none;
    std::vector<bp::txn_offset> offsets;
    for (const auto& t : req.topics) {
        auto info = ctx.svc().log.find_topic(t.name);
        for (const auto& p : t.partitions) {
            if (!info || p.partition_index.value < 0 ||
                p.partition_index.value >= info->partitions) {
                continue;
            }
            offsets.push_back({t.name, p.partition_index.value, p.committed_offset.value,
                               p.committed_leader_epoch, p.committed_metadata});
        }
    }
    if (!has_txn(ctx)) {
        common = kafka::error_code::coordinator_not_available;
    } else if (req.group_id.empty()) {
        common = kafka::error_code::invalid_group_id;
    } else {
        auto ec = co_await ctx.svc().txn->txn_offset_commit(
            req.transactional_id, req.producer_id.value, req.producer_epoch.value, req.group_id,
            req.member_id, req.group_instance_id, req.generation_id, std::move(offsets),
            ctx.version() >= 5);
        if (ec == make_error_code(bp::errc::producer_fenced)) {
            // compat: the group coordinator's verification reports a fenced producer as
            // INVALID_PRODUCER_EPOCH (AddPartitionsToTxnManager).
            common = kafka::error_code::invalid_producer_epoch;
        } else {
            common = txn_error(ec, ctx.version(), 0, 4);
        }
        if (ec) {
            kafka_log().debug("conn {} client '{}': TxnOffsetCommit v{} '{}' group '{}': {}",
                              ctx.connection().id, ctx.client_id(), ctx.version(),
                              req.transactional_id, req.group_id, ec.message());
        }
    }
    for (const auto& t : req.topics) {
        auto& tout = resp.topics.emplace_back();
        tout.name = t.name;
        auto info = ctx.svc().log.find_topic(t.name);
        for (const auto& p : t.partitions) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition_index = p.partition_index;
            pout.error_code = common;
            if (!info || p.partition_index.value < 0 ||
                p.partition_index.value >= info->partitions) {
                pout.error_code = kafka::error_code::unknown_topic_or_partition;
            }
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
