// Produce: append record batches to partitions, through the backend's records interface.
//
// The handler calls the backend before its first suspension, so the produce calls of
// pipelined requests on one connection are made in arrival order; the backend keeps that
// order per partition (backend/api/records.h) and answers once the acks are satisfied. Like
// Kafka, a topic is never created here: an unknown one is UNKNOWN_TOPIC_OR_PARTITION (clients
// create topics through Metadata, with auto-creation on).
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend/api/records.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/handlers/txn_support.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/logger.h"
#include "gateway/kafka/produce_payload.h"
#include "gateway/kafka/throttle.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

namespace {

/// compat: ReplicaManager.handleProduceAppend / AddPartitionsToTxnManager: how a failed
/// transaction verification reaches the producer.
kafka::error_code produce_error(std::error_code ec, std::int16_t version) {
    switch (api::reason(ec)) {
        case api::errc::producer_fenced:
            return kafka::error_code::invalid_producer_epoch;
        case api::errc::concurrent_transactions:
        case api::errc::coordinator_loading:
        case api::errc::coordinator_not_available:
            // Retriable for every client version without a metadata refresh.
            return kafka::error_code::not_enough_replicas;
        default:
            return txn_error(ec, version, 0, 11);
    }
}

/// compat: LogValidator.processRecordErrors: the message of the InvalidRecordException a batch
/// with refused records fails with, which Produce v8+ returns as the partition's error_message
/// (RecordError.toString and List.toString spell the list).
std::string record_errors_message(const std::vector<api::record_error>& errors) {
    std::string shown;
    for (std::size_t i = 0; i < errors.size() && i < 3; ++i) {
        shown += fmt::format("{}RecordError(batchIndex={}, message='{}')", i > 0 ? ", " : "",
                             errors[i].batch_index, errors[i].message);
    }
    return fmt::format("One or more records have been rejected due to {} record errors in total, "
                       "and only showing the first three errors at most: [{}]",
                       errors.size(), shown);
}

}  // namespace

/// WRITE on the transactional id when there is one (access 0), then WRITE on each topic in
/// request order, asked only when the transactional id was allowed (Kafka's order).
void produce_handler::declare(std::int16_t, const request& req, access_list& out) {
    std::uint16_t txn = no_access;
    if (req.transactional_id) {
        txn = out.add(auth::acl_operation::write, auth::resource_type::transactional_id,
                      *req.transactional_id);
    }
    for (const auto& topic : req.topic_data) {
        out.add(auth::acl_operation::write, auth::resource_type::topic, topic.name);
        if (txn != no_access) {
            out.only_if(txn);
        }
    }
}

boost::asio::awaitable<produce_handler::response> produce_handler::handle(request_context& ctx,
                                                                          request req) {
    response resp;
    const std::int16_t acks = req.acks;
    const bool valid_acks = acks == -1 || acks == 0 || acks == 1;
    bool any_error = false;

    // What the backend appends, and where each partition's answer goes (its partitions in
    // request order, skipping those refused here).
    api::produce_request call;
    call.acks = static_cast<api::acks>(acks);
    if (req.transactional_id) {
        call.txn_id = transactional_id(*req.transactional_id);
    }
    call.implicit_txn_partitions = ctx.version() >= 12 && ctx.svc().txn.transaction_version() >= 2;
    std::vector<produce_payload> payloads;  // keeps converted legacy message sets alive
    std::vector<std::vector<std::size_t>> sent;  // per topic: indexes of partitions sent
    double produced_bytes = 0;  // what producer_byte_rate counts: the batches sent on

    // The chain's verdicts (declare): a refused transactional id fails every partition with
    // TRANSACTIONAL_ID_AUTHORIZATION_FAILED, a refused topic its partitions.
    const access_verdicts& verdicts = ctx.verdicts();
    const std::size_t first_topic = req.transactional_id ? 1 : 0;
    const bool txn_denied = req.transactional_id && verdicts.denied(0);
    resp.responses.reserve(req.topic_data.size());
    for (std::size_t ti = 0; ti < req.topic_data.size(); ++ti) {
        auto& topic = req.topic_data[ti];
        const bool topic_denied = !txn_denied && verdicts.denied(first_topic + ti);
        auto& tout = resp.responses.emplace_back();
        tout.name = topic.name;
        tout.topic_id = topic.topic_id;
        auto& ctopic = call.topics.emplace_back();
        ctopic.topic = topic_name(topic.name);
        auto& indexes = sent.emplace_back();
        tout.partition_responses.reserve(topic.partition_data.size());
        for (auto& part : topic.partition_data) {
            auto& pout = tout.partition_responses.emplace_back();
            pout.index = part.index;
            pout.base_offset = offset(-1);
            if (!valid_acks) {
                pout.error_code = kafka::error_code::invalid_required_acks;
                any_error = true;
                continue;
            }
            if (txn_denied || topic_denied) {
                pout.error_code = txn_denied
                                      ? kafka::error_code::transactional_id_authorization_failed
                                      : kafka::error_code::topic_authorization_failed;
                any_error = true;
                continue;
            }
            // The payload: v2 batches as they are, or legacy message sets converted to v2.
            auto payload = produce_payload::from(part.records, ctx.version());
            if (!payload) {
                pout.error_code = to_kafka(payload.error());
                any_error = true;
                continue;
            }
            produced_bytes += static_cast<double>(part.records.size());
            ctopic.partitions.push_back({part.index, payload->mutable_batches()});
            payloads.push_back(std::move(*payload));
            indexes.push_back(tout.partition_responses.size() - 1);
        }
    }

    // Before any suspension of this handler: see the file comment.
    api::produce_result done = co_await ctx.svc().records.produce(std::move(call));

    for (std::size_t t = 0; t < done.topics.size(); ++t) {
        auto& tout = resp.responses[t];
        for (std::size_t i = 0; i < done.topics[t].partitions.size(); ++i) {
            const auto& p = done.topics[t].partitions[i];
            auto& pout = tout.partition_responses[sent[t][i]];
            pout.log_start_offset = p.log_start_offset.value;
            if (p.error) {
                pout.error_code = produce_error(p.error.code, ctx.version());
                any_error = true;
                // KIP-467 (v8+): which records the batch failed for, so that a client fails
                // those with INVALID_RECORD and the others as collateral.
                if (!p.record_errors.empty()) {
                    pout.record_errors.reserve(p.record_errors.size());
                    for (const auto& e : p.record_errors) {
                        pout.record_errors.push_back({e.batch_index, e.message, {}});
                    }
                    pout.error_message = record_errors_message(p.record_errors);
                }
                kafka_log().debug("conn {} client '{}': produce to {}-{} failed: {}",
                                  ctx.connection().id, ctx.client_id(), tout.name,
                                  p.partition.value, p.error.code.message());
                continue;
            }
            pout.error_code = kafka::error_code::none;
            pout.base_offset = p.base_offset;
            pout.log_append_time_ms = p.log_append_time_ms;
        }
    }

    // producer_byte_rate: over the quota, throttle_time_ms tells the client and the connection
    // is muted (acks=0 too, with no response); before v6 (KIP-219) the response waits as well.
    resp.throttle_time_ms =
        record_quota(ctx, auth::quota_kind::producer_byte_rate, produced_bytes, 6);

    if (acks == 0) {
        // compat: no response at all; on an error Kafka closes the connection so that the
        // client refreshes its metadata.
        ctx.suppress_response();
        if (any_error) {
            ctx.close_connection_after();
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
