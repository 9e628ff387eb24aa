// TxnOffsetCommit: consumed offsets that become the group's committed offsets only when the
// producer's transaction commits. The group coordinator checks the member and generation
// (v3+, KIP-447); the transaction coordinator keeps the offsets pending until EndTxn. v5
// (KIP-890) adds the group to the transaction when AddOffsetsToTxn was not sent.
#include "backend/api/topics.h"
#include "backend/api/transactions.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/handlers/txn_support.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

/// READ on each topic (access i for topic i), then, unless the group id is empty (an invalid
/// request), WRITE on the transactional id and READ on the group, asked only when the id was
/// allowed.
void txn_offset_commit_handler::declare(std::int16_t, const request& req, access_list& out) {
    for (const auto& t : req.topics) {
        out.add(auth::acl_operation::read, auth::resource_type::topic, t.name);
    }
    if (req.group_id.empty()) {
        return;
    }
    const auto txn = out.add(auth::acl_operation::write, auth::resource_type::transactional_id,
                             req.transactional_id);
    out.add(auth::acl_operation::read, auth::resource_type::group, req.group_id);
    out.only_if(txn);
}

boost::asio::awaitable<txn_offset_commit_handler::response> txn_offset_commit_handler::handle(
    request_context& ctx, request req) {
    response resp;
    kafka::error_code common = kafka::error_code::none;
    // The partitions that exist; the others are answered UNKNOWN_TOPIC_OR_PARTITION.
    std::vector<std::optional<api::topic_description>> infos;
    api::txn_offset_commit_request call;
    // compat: OffsetMetadataManager.commitTransactionalOffset refuses metadata over
    // offset.metadata.max.bytes per partition, as OffsetCommit does; the others go on.
    // The server checked the setting's range at start (0 to 32767, what a record holds).
    const auto metadata_limit = static_cast<std::size_t>(
        std::max<std::int32_t>(ctx.svc().kafka.offset_metadata_max_bytes, 0));
    auto too_large = [&](const auto& p) {
        return p.committed_metadata && p.committed_metadata->size() > metadata_limit;
    };
    for (const auto& t : req.topics) {
        auto& info = infos.emplace_back(co_await ctx.svc().topics.describe(topic_name(t.name)));
        for (const auto& p : t.partitions) {
            if (!info || p.partition_index.value < 0 ||
                p.partition_index.value >= info->partitions || too_large(p)) {
                continue;
            }
            call.offsets.push_back({topic_name(t.name), p.partition_index, p.committed_offset,
                                    p.committed_leader_epoch, p.committed_metadata});
        }
    }
    // The verdicts (declare): READ on each topic, WRITE on the transactional id, READ on the
    // group.
    const access_verdicts& verdicts = ctx.verdicts();
    std::vector<bool> topic_denied;
    for (std::size_t ti = 0; ti < req.topics.size(); ++ti) {
        const auto& t = req.topics[ti];
        topic_denied.push_back(verdicts.denied(ti));
        if (topic_denied.back()) {
            std::erase_if(call.offsets, [&](const auto& o) { return o.topic.value == t.name; });
        }
    }
    if (req.group_id.empty()) {
        common = kafka::error_code::invalid_group_id;
    } else if (verdicts.denied(req.topics.size())) {
        common = kafka::error_code::transactional_id_authorization_failed;
    } else if (verdicts.denied(req.topics.size() + 1)) {
        common = kafka::error_code::group_authorization_failed;
    } else {
        call.txn_id = transactional_id(req.transactional_id);
        call.producer = {req.producer_id, req.producer_epoch};
        call.group_id = group_id(req.group_id);
        call.member_id = req.member_id;
        call.group_instance_id = req.group_instance_id;
        call.generation_id = req.generation_id;
        call.implicit = ctx.version() >= 5;
        const auto ec = api::error_of(co_await ctx.svc().txn.txn_offset_commit(std::move(call)));
        if (ec && api::reason(ec) == api::errc::producer_fenced) {
            // compat: the group coordinator's verification reports a fenced producer as
            // INVALID_PRODUCER_EPOCH (AddPartitionsToTxnManager).
            common = kafka::error_code::invalid_producer_epoch;
        } else {
            common = txn_error(ec, ctx.version(), 0, 4);
        }
        if (ec) {
            kafka_log().debug("conn {} client '{}': TxnOffsetCommit v{} '{}' group '{}': {}",
                              ctx.connection().id, ctx.client_id(), ctx.version(),
                              req.transactional_id, req.group_id, ec.code.message());
        }
    }
    for (std::size_t i = 0; i < req.topics.size(); ++i) {
        const auto& t = req.topics[i];
        const auto& info = infos[i];
        auto& tout = resp.topics.emplace_back();
        tout.name = t.name;
        for (const auto& p : t.partitions) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition_index = p.partition_index;
            pout.error_code = common;
            if (topic_denied[i] && common == kafka::error_code::none) {
                pout.error_code = kafka::error_code::topic_authorization_failed;
            } else if (!info || p.partition_index.value < 0 ||
                       p.partition_index.value >= info->partitions) {
                pout.error_code = kafka::error_code::unknown_topic_or_partition;
            } else if (too_large(p) && common == kafka::error_code::none) {
                pout.error_code = kafka::error_code::offset_metadata_too_large;
            }
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
