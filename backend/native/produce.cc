// The native produce path (native_records::produce): every partition's batches are appended in
// request order, idempotent and transactional ones checked against the partition's producer
// state inside the append; then, for acks=all, the call waits for the group-commit fsync of
// everything it appended.
#include <chrono>
#include <optional>

#include "backend/logger.h"
#include "backend/native/clock.h"
#include "backend/native/native_records.h"
#include "backend/producer/errc.h"
#include "protocol/kafka/record_batch.h"

namespace sluice::backend::native {
namespace kafka = protocol::kafka;
namespace blog = backend::log;
namespace bp = backend::producer;

namespace {

/// Producer fields of one partition's batches.
struct producer_fields {
    bool any = false;  // some batch carries a producer id
    bool transactional = false;
    std::int64_t producer_id = -1;
    std::int16_t epoch = -1;
    bool mixed = false;  // transactional batches of more than one producer
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
            if (f.transactional &&
                (h->producer_id != f.producer_id || h->producer_epoch != f.epoch)) {
                f.mixed = true;
            }
            f.transactional = true;
            f.producer_id = h->producer_id;
            f.epoch = h->producer_epoch;
        }
    }
    return f;
}

struct pending_flush {
    api::produced_partition* out;
    std::shared_ptr<blog::partition_log> partition;
    offset end;
};

}  // namespace

native_records::native_records(blog::log_manager& log, bp::producer_state_manager& states,
                               bp::transaction_coordinator& txn, boost::asio::any_io_executor pool,
                               traffic& counters)
    : log_(log), states_(states), txn_(txn), pool_(std::move(pool)), traffic_(counters) {}

api::awaitable<api::produce_result> native_records::produce(api::produce_request req) {
    api::produce_result resp;
    const std::int64_t now_ms = wall_clock_ms();
    std::vector<pending_flush> flushes;
    // Pointers into resp stay valid: every vector is sized before its elements are taken.
    resp.topics.reserve(req.topics.size());
    for (auto& topic : req.topics) {
        auto& tout = resp.topics.emplace_back();
        tout.topic = topic.topic;
        std::optional<blog::topic_info> info = log_.find_topic(topic.topic.value);
        tout.partitions.reserve(topic.partitions.size());
        for (auto& part : topic.partitions) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition = part.partition;
            std::shared_ptr<blog::partition_log> log;
            if (info) {
                log = log_.partition(info->name, part.partition);
            }
            if (!log) {
                pout.error = make_error_code(blog::errc::unknown_topic_or_partition);
                continue;
            }
            if (info->internal) {
                pout.error = make_error_code(api::errc::internal_topic);
                continue;
            }
            blog::append_options opts;
            opts.now_ms = now_ms;
            opts.record_errors = &pout.record_errors;
            // Idempotent and transactional batches are checked against the partition's
            // producer state inside the append (sequence numbers, epochs, duplicates).
            const producer_fields pf = scan_producers(part.batches);
            std::optional<bp::producer_state_manager::turn> turn;
            std::optional<bp::append_guard> guard;
            if (pf.any) {
                // Granted at once when the state is loaded; on first use the state loads off
                // this thread while this call keeps its place in the partition's order.
                auto t = co_await states_.wait_turn(log, pool_);
                if (!t) {
                    pout.error = t.error();
                    pout.log_start_offset = log->log_start_offset();
                    continue;
                }
                turn = std::move(*t);
                guard.emplace(turn->state(), pf.transactional);
                opts.validator = &*guard;
            }
            result<blog::append_result> appended = fail(blog::errc::storage_error);
            if (pf.transactional) {
                if (!req.txn_id || pf.mixed) {
                    // compat: KafkaApis refuses transactional records without a transactional
                    // id, and a request mixing the batches of several producers.
                    pout.error = !req.txn_id ? make_error_code(api::errc::transactional_id_required)
                                             : make_error_code(api::errc::invalid_producer_id_mapping);
                    continue;
                }
                std::shared_ptr<blog::partition_log> txn_log;
                offset txn_end{0};
                auto verified = txn_.verify_for_produce(
                    req.txn_id->value, pf.producer_id, pf.epoch, {info->name, part.partition.value},
                    req.implicit_txn_partitions,
                    [&] { appended = log->append(part.batches, opts); }, &txn_log, &txn_end);
                if (verified) {
                    pout.error = verified;
                    pout.log_start_offset = log->log_start_offset();
                    producer_log().debug("transactional produce to {}-{} refused: {}", info->name,
                                         part.partition.value, verified.message());
                    continue;
                }
                if (txn_log && req.acks != api::acks::none) {
                    flushes.push_back({&pout, std::move(txn_log), txn_end});
                }
            } else {
                appended = log->append(part.batches, opts);
            }
            turn.reset();  // the next producer waiting for this partition may append now
            if (!appended) {
                pout.error = appended.error();
                pout.log_start_offset = log->log_start_offset();
                storage_log().debug("produce to {}-{} failed: {}", info->name,
                                    part.partition.value, appended.error().message());
                continue;
            }
            auto& counters = traffic_.of(info->name, part.partition);
            counters.bytes_in.fetch_add(part.batches.size(), std::memory_order_relaxed);
            counters.records_in.fetch_add(
                static_cast<std::uint64_t>(appended->last_offset - appended->base_offset + 1),
                std::memory_order_relaxed);
            if (appended->duplicate) {
                producer_log().debug("duplicate batch for {}-{} at offset {}", info->name,
                                     part.partition.value, appended->base_offset.value);
                appended->log_start_offset = log->log_start_offset();
            }
            pout.base_offset = appended->base_offset;
            pout.log_append_time_ms = appended->log_append_time_ms;
            pout.log_start_offset = appended->log_start_offset;
            if (req.acks == api::acks::all) {
                flushes.push_back({&pout, std::move(log), appended->last_offset + 1});
            }
        }
    }
    // acks=all is answered only once the appended bytes are on disk.
    for (auto& f : flushes) {
        auto durable = co_await f.partition->flush_to(f.end);
        if (!durable) {
            f.out->error = durable.error();
            f.out->base_offset = offset(-1);
        }
    }
    co_return resp;
}

}  // namespace sluice::backend::native
