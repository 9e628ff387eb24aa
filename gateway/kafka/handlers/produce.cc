// Produce: append record batches to partitions.
//
// Two phases (STYLE.md section 6): every append happens before the first suspension, so the
// appends of pipelined produce requests on one connection happen in arrival order; then, for
// acks=all, the handler waits for the group-commit fsync of what it appended.
#include <chrono>

#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "backend/producer/producer_state_manager.h"
#include "backend/producer/transaction_coordinator.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/blocking.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/handlers/txn_support.h"
#include "gateway/kafka/logger.h"
#include "gateway/kafka/produce_payload.h"
#include "gateway/kafka/traffic_metrics.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace blog = backend::log;

namespace {

using partition_response = produce_handler::response::partition_produce_response;

struct pending_flush {
    partition_response* out;
    std::shared_ptr<blog::partition_log> partition;
    offset end;
};

/// Producer fields of a request's batches for one partition.
struct producer_fields {
    bool any = false;           // some batch carries a producer id
    bool transactional = false;
    std::int64_t producer_id = -1;
    std::int16_t epoch = -1;
    bool mixed = false;         // transactional batches of more than one producer
};

producer_fields scan_producers(std::span<const std::byte> batches) {
    producer_fields f;
    kafka::batch_cursor cursor(batches);
    for (auto b = cursor.next(); !b.empty(); b = cursor.next()) {
        auto h = kafka::read_batch_header(b);
        if (!h || !h->has_producer_id()) {
            continue;
        }
        f.any = true;
        if (h->is_transactional()) {
            if (f.transactional && (h->producer_id != f.producer_id || h->producer_epoch != f.epoch)) {
                f.mixed = true;
            }
            f.transactional = true;
            f.producer_id = h->producer_id;
            f.epoch = h->producer_epoch;
        }
    }
    return f;
}

/// compat: ReplicaManager.handleProduceAppend / AddPartitionsToTxnManager: how a failed
/// transaction verification reaches the producer.
kafka::error_code verification_error(std::error_code ec, std::int16_t version) {
    namespace bp = backend::producer;
    if (ec == make_error_code(bp::errc::producer_fenced)) {
        return kafka::error_code::invalid_producer_epoch;
    }
    if (ec == make_error_code(bp::errc::concurrent_transactions) ||
        ec == make_error_code(bp::errc::coordinator_loading) ||
        ec == make_error_code(bp::errc::coordinator_not_available)) {
        // Retriable for every client version without a metadata refresh.
        return kafka::error_code::not_enough_replicas;
    }
    return txn_error(ec, version, 0, 11);
}

std::int64_t wall_clock_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

boost::asio::awaitable<produce_handler::response> produce_handler::handle(request_context& ctx,
                                                                 request req) {
    auto& svc = ctx.svc();
    response resp;
    const std::int16_t acks = req.acks;
    const bool valid_acks = acks == -1 || acks == 0 || acks == 1;
    const std::int64_t now_ms = wall_clock_ms();
    std::vector<pending_flush> flushes;
    bool any_error = false;

    resp.responses.reserve(req.topic_data.size());
    for (auto& topic : req.topic_data) {
        auto& tout = resp.responses.emplace_back();
        tout.name = topic.name;
        tout.topic_id = topic.topic_id;
        std::optional<blog::topic_info> info = svc.log.find_topic(topic.name);
        if (!info && valid_acks && svc.kafka.auto_create_topics && !topic.name.empty()) {
            auto created = co_await run_blocking(
                svc, [&] { return svc.log.create_topic(topic.name, svc.kafka.num_partitions, {}); });
            info = created ? std::optional(*created) : svc.log.find_topic(topic.name);
            if (created) {
                kafka_log().info("auto-created topic '{}' with {} partitions on produce",
                                 topic.name, svc.kafka.num_partitions);
            }
        }
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
            std::shared_ptr<blog::partition_log> log;
            if (info) {
                log = svc.log.partition(info->name, part.index);
            }
            if (!log) {
                pout.error_code = kafka::error_code::unknown_topic_or_partition;
                any_error = true;
                continue;
            }
            if (info->internal) {
                // compat: Kafka refuses client writes to internal topics.
                pout.error_code = kafka::error_code::invalid_topic_exception;
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
            blog::append_options opts;
            opts.now_ms = now_ms;
            // Idempotent and transactional batches are checked against the partition's producer
            // state inside the append (sequence numbers, epochs, duplicates).
            const producer_fields pf = scan_producers(payload->mutable_batches());
            std::optional<backend::producer::append_guard> guard;
            if (pf.any && svc.producers != nullptr) {
                auto st = svc.producers->state_for(log);
                if (!st) {
                    pout.error_code = to_kafka(st.error());
                    any_error = true;
                    continue;
                }
                guard.emplace(**st, pf.transactional);
                opts.validator = &*guard;
            }
            result<blog::append_result> appended = fail(blog::errc::storage_error);
            if (pf.transactional) {
                if (!req.transactional_id || svc.txn == nullptr || pf.mixed) {
                    // compat: KafkaApis refuses transactional records without an (authorized)
                    // transactional id.
                    pout.error_code = !req.transactional_id
                                          ? kafka::error_code::transactional_id_authorization_failed
                                          : kafka::error_code::invalid_producer_id_mapping;
                    any_error = true;
                    continue;
                }
                std::shared_ptr<blog::partition_log> txn_log;
                offset txn_end{0};
                auto verified = svc.txn->verify_for_produce(
                    *req.transactional_id, pf.producer_id, pf.epoch, {info->name, part.index.value},
                    ctx.version() >= 12 && svc.txn->settings().transaction_version >= 2,
                    [&] { appended = log->append(payload->mutable_batches(), opts); }, &txn_log,
                    &txn_end);
                if (verified) {
                    pout.error_code = verification_error(verified, ctx.version());
                    pout.log_start_offset = log->log_start_offset().value;
                    any_error = true;
                    kafka_log().debug("conn {} client '{}': transactional produce to {}-{} "
                                      "refused: {}", ctx.connection().id, ctx.client_id(),
                                      info->name, part.index.value, verified.message());
                    continue;
                }
                if (txn_log && acks != 0) {
                    flushes.push_back({&pout, std::move(txn_log), txn_end});
                }
            } else {
                appended = log->append(payload->mutable_batches(), opts);
            }
            if (!appended) {
                pout.error_code = to_kafka(appended.error());
                pout.log_start_offset = log->log_start_offset().value;
                any_error = true;
                kafka_log().debug("conn {} client '{}': produce to {}-{} failed: {}",
                                  ctx.connection().id, ctx.client_id(), info->name,
                                  part.index.value, appended.error().message());
                continue;
            }
            auto& traffic = svc.traffic.of(info->name, part.index.value);
            traffic.bytes_in.fetch_add(payload->mutable_batches().size(), std::memory_order_relaxed);
            traffic.records_in.fetch_add(
                static_cast<std::uint64_t>(appended->last_offset - appended->base_offset + 1),
                std::memory_order_relaxed);
            if (appended->duplicate) {
                kafka_log().debug("conn {} client '{}': duplicate batch for {}-{} at offset {}",
                                  ctx.connection().id, ctx.client_id(), info->name,
                                  part.index.value, appended->base_offset.value);
                appended->log_start_offset = log->log_start_offset();
            }
            pout.error_code = kafka::error_code::none;
            pout.base_offset = appended->base_offset;
            pout.log_append_time_ms = appended->log_append_time_ms;
            pout.log_start_offset = appended->log_start_offset.value;
            if (acks == -1) {
                flushes.push_back({&pout, std::move(log), appended->last_offset + 1});
            }
        }
    }

    if (acks == 0) {
        // compat: no response at all; on an error Kafka closes the connection so that the
        // client refreshes its metadata.
        ctx.suppress_response();
        if (any_error) {
            ctx.close_connection_after();
        }
        co_return resp;
    }

    // Phase two: acks=all is answered only once the appended bytes are on disk.
    for (auto& f : flushes) {
        auto durable = co_await f.partition->flush_to(f.end);
        if (!durable) {
            f.out->error_code = to_kafka(durable.error());
            f.out->base_offset = offset(-1);
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
