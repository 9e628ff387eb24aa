// Fetch: read stored batches from partitions through the backend's records interface, which
// parks the request (without polling) until min_bytes are available or max_wait passes.
// Batches are returned as stored (file regions the connection sends with sendfile); versions
// 0-3 predate the v2 format and get down-converted message sets.
#include <algorithm>

#include "backend/api/records.h"
#include "backend/api/records_memory.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/socket_rtt.h"
#include "gateway/kafka/throttle.h"
#include "protocol/kafka/legacy_message.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

namespace {

/// The most one response carries on this connection (fetch.response.max.bytes). Adaptive by
/// default: a client parses a response in one pass after receiving it whole, so a 50 MB
/// response (librdkafka's default fetch.max.bytes) runs out of the CPU cache and costs it
/// three times the CPU per record of a 1 MiB one (docs/benchmarks.md); but one response per
/// round trip must still fill a long link, so the cap grows with the connection's round-trip
/// time (the kernel's minimum, not the smoothed one a busy client inflates): about 1 GB/s
/// times the RTT, at least 1 MiB.
std::int64_t response_cap(const request_context& ctx) {
    const std::int64_t configured = ctx.svc().kafka.fetch_response_max_bytes;
    if (configured >= 0) {
        return configured == 0 ? INT32_MAX : configured;
    }
    constexpr std::int64_t floor = std::int64_t{1} << 20;
    const auto rtt_us = tcp_min_rtt_us(ctx.connection().socket_fd);
    // 1 GB/s is about 1 KiB per microsecond.
    return rtt_us ? std::clamp<std::int64_t>(std::int64_t{*rtt_us} * 1024, floor, INT32_MAX)
                  : floor;
}

/// Fetch v0-1 read magic 0 messages, v2-3 magic 1: convert the stored v2 batches.
void down_convert(fetch_handler::response::partition_data& pout, std::int16_t version) {
    if (pout.records.is_null() || pout.records.size() == 0) {
        return;
    }
    auto bytes = api::read_records_into_memory(pout.records);
    if (!bytes) {
        pout.error_code = kafka::error_code::kafka_storage_error;
        pout.records = kafka::records::empty();
        return;
    }
    auto converted = kafka::convert_batches_to_legacy(bytes->view(),
                                                      kafka::legacy_magic_for_fetch(version),
                                                      kafka::default_max_decompressed_bytes);
    if (!converted) {
        pout.error_code = kafka::error_code::corrupt_message;
        pout.records = kafka::records::empty();
        return;
    }
    pout.records = kafka::records::copy_of(converted->view());
}

}  // namespace

/// READ on each topic, in request order; v13+ names topics by id, so each is decided once the
/// backend's answer names it (add_later). Nothing for the continuation of a fetch session,
/// which is refused before any check.
void fetch_handler::declare(std::int16_t version, const request& req, access_list& out) {
    if (version >= 7 && (req.session_id != 0 || req.session_epoch > 0)) {
        return;
    }
    out.reserve(req.topics.size());
    for (const auto& topic : req.topics) {
        if (version >= 13) {
            out.add_later(auth::acl_operation::read, auth::resource_type::topic);
        } else {
            out.add(auth::acl_operation::read, auth::resource_type::topic, topic.topic);
        }
    }
}

boost::asio::awaitable<fetch_handler::response> fetch_handler::handle(request_context& ctx,
                                                                      request req) {
    response resp;
    resp.error_code = kafka::error_code::none;
    resp.session_id = 0;
    const std::int16_t version = ctx.version();

    // Fetch sessions (KIP-227) are declined: every fetch is a full one. A client asking to
    // continue a session learns that it does not exist and starts over with a full fetch.
    if (version >= 7 && (req.session_id != 0 || req.session_epoch > 0)) {
        resp.error_code = kafka::error_code::fetch_session_id_not_found;
        co_return resp;
    }

    // consumer_byte_rate: a client already over its quota gets an empty response at once
    // (compat: KafkaApis.handleFetchRequest's throttled response) and its connection is muted
    // for the throttle time; before v8 (KIP-219) the response waits that long instead.
    if (const auto ms = throttled_already(ctx, auth::quota_kind::consumer_byte_rate, 8); ms > 0) {
        resp.throttle_time_ms = ms;
        co_return resp;
    }

    api::fetch_request call;
    // compat: isolation_level 1 (read_committed, v4+) stops at the last stable offset and gets
    // the aborted transactions in what it reads; 0 sees everything.
    call.isolation = version >= 4 && req.isolation_level == 1 ? api::isolation::read_committed
                                                              : api::isolation::read_uncommitted;
    // READ on each topic (declare; v13+ names topics by id, decided on the name found).
    std::vector<bool> denied(req.topics.size(), false);
    for (std::size_t ti = 0; ti < req.topics.size(); ++ti) {
        auto& topic = req.topics[ti];
        if (version < 13 && ctx.verdicts().denied(ti)) {
            denied[ti] = true;
            continue;
        }
        auto& t = call.topics.emplace_back();
        // v13+ names topics by id only.
        if (version >= 13) {
            t.id = topic.topic_id;
        } else {
            t.topic = topic_name(topic.topic);
        }
        for (auto& part : topic.partitions) {
            t.partitions.push_back({part.partition, part.fetch_offset, part.partition_max_bytes});
        }
    }
    // Preferred read replica (v11+) is unset (-1): this broker serves every read.

    // Fetch v0-2 has no response limit of its own; the connection's cap applies to all.
    const std::int64_t client_limit = version >= 3 ? std::max(req.max_bytes, 0) : INT32_MAX;
    const std::int64_t cap = response_cap(ctx);
    call.max_bytes = std::min(client_limit, cap);
    // Not bigger than what the quota has left (one batch still comes back, as it does when
    // the client's own limit is smaller than the first batch).
    if (const auto left = quota_headroom(ctx, auth::quota_kind::consumer_byte_rate)) {
        call.max_bytes = std::min<std::int64_t>(
            call.max_bytes, std::max<std::int64_t>(static_cast<std::int64_t>(*left), 1));
    }
    // A client asking for more than the cap holds (fetch.min.bytes of several MB) is answered
    // as soon as the cap is what ends the response: records.fetch does not park a response the
    // limit cut short.
    call.min_bytes = std::max(req.min_bytes, 0);
    call.max_wait = req.max_wait_ms;
    // When the response limit cuts the list short, start each request (the correlation id
    // counts them) at another partition.
    call.first_partition = static_cast<std::uint32_t>(ctx.header().correlation_id);

    api::fetch_result got = co_await ctx.svc().records.fetch(std::move(call));

    resp.responses.reserve(req.topics.size());
    std::size_t next_got = 0;
    for (std::size_t ti = 0; ti < req.topics.size(); ++ti) {
        auto& tout = resp.responses.emplace_back();
        tout.topic = req.topics[ti].topic;
        tout.topic_id = req.topics[ti].topic_id;
        if (!denied[ti] && version >= 13 && next_got < got.topics.size() &&
            !got.topics[next_got].topic.value.empty() &&
            !decide_late(ctx, auth::acl_operation::read, auth::resource_type::topic,
                         got.topics[next_got].topic.value)) {
            denied[ti] = true;
            ++next_got;
        }
        // compat: records stay empty (not null) in every partition, as FetchResponse.partitionResponse
        // sets them; librdkafka drops a response with a null one whole.
        // compat: records stay empty, not null, in these partitions too (the generated
        // default), as FetchResponse.partitionResponse sets them: librdkafka drops a response
        // with a null one whole and never reports the error.
        if (denied[ti] || next_got >= got.topics.size()) {
            for (const auto& part : req.topics[ti].partitions) {
                auto& pout = tout.partitions.emplace_back();
                pout.partition_index = part.partition;
                pout.error_code = kafka::error_code::topic_authorization_failed;
                pout.high_watermark = offset(-1);
                pout.last_stable_offset = offset(-1);
                pout.log_start_offset = offset(-1);
            }
            continue;
        }
        auto& gt = got.topics[next_got++];
        tout.partitions.reserve(gt.partitions.size());
        for (auto& gp : gt.partitions) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition_index = gp.partition;
            pout.error_code = to_kafka(gp.error);
            pout.high_watermark = gp.high_watermark;
            pout.last_stable_offset = gp.last_stable_offset;
            pout.log_start_offset = gp.log_start_offset;
            pout.records = std::move(gp.records);
            // compat: a partition that does not exist gets a null list, as Kafka sends it.
            if (version >= 4 && gp.high_watermark.value >= 0) {
                auto& aborted = pout.aborted_transactions.emplace();
                for (const auto& a : gp.aborted) {
                    aborted.push_back({a.producer, a.first_offset, {}});
                }
            }
            if (version <= 3) {
                down_convert(pout, version);
            }
        }
    }
    double fetched_bytes = 0;
    for (const auto& t : resp.responses) {
        for (const auto& p : t.partitions) {
            fetched_bytes += static_cast<double>(p.records.size());
        }
    }
    resp.throttle_time_ms = record_quota(ctx, auth::quota_kind::consumer_byte_rate,
                                         fetched_bytes, 8);
    co_return resp;
}

}  // namespace sluice::gateway
