// Produce: append record batches to partitions.
//
// Two phases (STYLE.md section 6): every append happens before the first suspension, so the
// appends of pipelined produce requests on one connection happen in arrival order; then, for
// acks=all, the handler waits for the group-commit fsync of what it appended.
#include <chrono>

#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/logger.h"
#include "gateway/kafka/produce_payload.h"

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
            auto created = svc.log.create_topic(topic.name, svc.kafka.num_partitions, {});
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
            auto appended = log->append(payload->mutable_batches(), opts);
            if (!appended) {
                pout.error_code = to_kafka(appended.error());
                pout.log_start_offset = log->log_start_offset().value;
                any_error = true;
                kafka_log().debug("conn {} client '{}': produce to {}-{} failed: {}",
                                  ctx.connection().id, ctx.client_id(), info->name,
                                  part.index.value, appended.error().message());
                continue;
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
