// Fetch: read stored batches from partitions, parking the request (without polling) until
// min_bytes are available or max_wait passes. Batches are returned as stored (file regions the
// connection sends with sendfile); versions 0-3 predate the v2 format and get down-converted
// message sets. The sluice_fetch_parked gauge counts the fetches parked at any moment.
#include <algorithm>
#include <chrono>

#include "backend/log/data_waiter.h"
#include "backend/log/log_manager.h"
#include "backend/log/partition_log.h"
#include "backend/producer/producer_state_manager.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/logger.h"
#include "gateway/kafka/records_io.h"
#include "gateway/kafka/socket_rtt.h"
#include "gateway/kafka/traffic_metrics.h"
#include "gateway/server/metrics.h"
#include "protocol/kafka/legacy_message.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace blog = backend::log;

namespace {

using partition_data = fetch_handler::response::partition_data;

/// Counts one parked fetch on the sluice_fetch_parked gauge for as long as it lives, so that a
/// wait left by an exception or a destroyed coroutine is uncounted too.
class parked_count {
public:
    explicit parked_count(gauge& g) : g_(g) { g_.add(1); }
    ~parked_count() { g_.add(-1); }
    parked_count(const parked_count&) = delete;
    parked_count& operator=(const parked_count&) = delete;

private:
    gauge& g_;
};

struct fetch_target {
    partition_data* out;
    std::shared_ptr<blog::partition_log> log;
    offset fetch_offset;
    std::int32_t max_bytes;
    /// read_committed: the partition's producer state (last stable offset, aborted index).
    std::shared_ptr<backend::producer::partition_producer_state> txn;
};

/// The offset after the last batch of `records` (-1 when they cannot be read).
std::int64_t end_of(const kafka::records& records) {
    auto bytes = read_records_into_memory(records);
    if (!bytes) {
        return -1;
    }
    std::int64_t end = -1;
    kafka::batch_cursor cursor(bytes->view());
    for (auto b = cursor.next(); !b.empty(); b = cursor.next()) {
        if (auto h = kafka::read_batch_header(b)) {
            end = h->last_offset() + 1;
        }
    }
    return end;
}

/// compat: Kafka's collectAbortedTransactions: the aborted transactions whose marker is at or
/// after the fetch offset and whose data starts before the end of what is returned.
void add_aborted(partition_data& pout, const backend::producer::partition_producer_state& st,
                 offset fetch_offset, offset lso) {
    auto aborted = st.aborted_between(fetch_offset.value, lso.value);
    if (aborted.empty()) {
        return;
    }
    std::int64_t upper = lso.value;
    if (pout.records.size() > 0) {
        if (std::int64_t end = end_of(pout.records); end >= 0) {
            upper = std::min(upper, end);
        }
    }
    for (const auto& a : aborted) {
        if (a.first_offset < upper) {
            pout.aborted_transactions->push_back({producer_id(a.producer_id), offset(a.first_offset), {}});
        }
    }
}

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
    return rtt_us ? std::clamp<std::int64_t>(std::int64_t{*rtt_us} * 1024, floor, INT32_MAX) : floor;
}

}  // namespace

boost::asio::awaitable<fetch_handler::response> fetch_handler::handle(request_context& ctx, request req) {
    auto& svc = ctx.svc();
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

    std::vector<fetch_target> targets;
    bool has_errors = false;
    // compat: isolation_level 1 (read_committed, v4+) stops at the last stable offset and gets
    // the aborted transactions in what it reads; 0 sees everything.
    const bool read_committed =
        version >= 4 && req.isolation_level == 1 && svc.producers != nullptr;
    resp.responses.reserve(req.topics.size());
    for (auto& topic : req.topics) {
        auto& tout = resp.responses.emplace_back();
        tout.topic = topic.topic;
        tout.topic_id = topic.topic_id;
        std::optional<blog::topic_info> info = version >= 13 ? svc.log.find_topic(topic.topic_id)
                                                             : svc.log.find_topic(topic.topic);
        tout.partitions.reserve(topic.partitions.size());
        for (auto& part : topic.partitions) {
            auto& pout = tout.partitions.emplace_back();
            pout.partition_index = part.partition;
            pout.high_watermark = offset(-1);
            pout.last_stable_offset = offset(-1);
            pout.log_start_offset = offset(-1);
            pout.records = kafka::records::empty();
            std::shared_ptr<blog::partition_log> log;
            if (info) {
                log = svc.log.partition(info->name, part.partition);
            }
            if (!log) {
                pout.error_code = version >= 13 && !info ? kafka::error_code::unknown_topic_id
                                                         : kafka::error_code::unknown_topic_or_partition;
                has_errors = true;
                continue;
            }
            std::shared_ptr<backend::producer::partition_producer_state> txn;
            if (read_committed) {
                auto st = svc.producers->state_for(log);
                if (!st) {
                    pout.error_code = to_kafka(st.error());
                    has_errors = true;
                    continue;
                }
                txn = std::move(*st);
            }
            targets.push_back({&pout, std::move(log), part.fetch_offset,
                               std::max<std::int32_t>(part.partition_max_bytes, 0), std::move(txn)});
        }
    }
    // Preferred read replica (v11+) is unset (-1): this broker serves every read.

    // Fetch v0-2 has no response limit of its own; the connection's cap applies to all.
    const std::int64_t client_limit = version >= 3 ? std::max(req.max_bytes, 0) : INT32_MAX;
    const std::int64_t cap = response_cap(ctx);
    const std::int64_t response_limit = std::min(client_limit, cap);
    // A client asking for more than our cap holds (fetch.min.bytes of several MB) must not wait
    // out max_wait with a full response ready: half the cap counts as enough (a greedy fill of
    // whole batches stops within one batch of the cap).
    std::int64_t min_bytes = std::max(req.min_bytes, 0);
    if (cap < client_limit) {
        min_bytes = std::min(min_bytes, cap / 2);
    }
    const auto deadline = std::chrono::steady_clock::now() + req.max_wait_ms;

    for (;;) {
        // Register before reading so that an append between the read and the wait is not lost.
        auto waiter = std::make_shared<blog::timer_waiter>(ctx.executor());
        const bool may_wait = !has_errors && req.max_wait_ms.count() > 0 &&
                              std::chrono::steady_clock::now() < deadline;
        if (may_wait) {
            for (auto& t : targets) {
                t.log->add_waiter(waiter);
            }
        }
        std::int64_t total = 0;
        bool errors = has_errors;
        // When the response limit cuts the list short, the partitions left out must not always
        // be the same ones: start each request (the correlation id counts them) at another one.
        const std::size_t first =
            targets.empty() ? 0
                            : static_cast<std::uint32_t>(ctx.header().correlation_id) % targets.size();
        for (std::size_t i = 0; i < targets.size(); ++i) {
            auto& t = targets[(first + i) % targets.size()];
            auto& pout = *t.out;
            pout.error_code = kafka::error_code::none;
            pout.records = kafka::records::empty();
            pout.high_watermark = t.log->high_watermark();
            pout.last_stable_offset = t.log->high_watermark();
            pout.log_start_offset = t.log->log_start_offset();
            if (version >= 4) {
                pout.aborted_transactions.emplace();
            }
            const std::int64_t room = std::min<std::int64_t>(t.max_bytes, response_limit - total);
            if (room <= 0 && total > 0) {
                continue;
            }
            blog::read_options ropts;
            ropts.min_one_batch = total == 0;
            offset lso = pout.high_watermark;
            if (t.txn) {
                lso = t.txn->last_stable_offset(pout.high_watermark);
                ropts.max_offset = lso;
                pout.last_stable_offset = lso;
            }
            auto got = t.log->read(t.fetch_offset, static_cast<std::size_t>(std::max<std::int64_t>(room, 0)),
                                   ropts);
            if (!got) {
                pout.error_code = to_kafka(got.error());
                errors = true;
                continue;
            }
            pout.high_watermark = got->high_watermark;
            pout.last_stable_offset = t.txn ? std::min(lso, got->high_watermark) : got->high_watermark;
            pout.log_start_offset = got->log_start_offset;
            total += static_cast<std::int64_t>(got->records.size());
            pout.records = std::move(got->records);
            if (t.txn && version >= 4) {
                add_aborted(pout, *t.txn, t.fetch_offset, pout.last_stable_offset);
            }
        }
        if (errors || total >= min_bytes || !may_wait) {
            break;
        }
        {
            // Looked up only here, where a fetch parks, not for every fetch served at once.
            parked_count parked(svc.metrics.get_gauge(
                "sluice_fetch_parked",
                "Fetch requests currently parked waiting for data or their deadline"));
            co_await waiter->wait_until(deadline);
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            // One last read below picks up anything that arrived just before the deadline.
            has_errors = false;
            req.max_wait_ms = std::chrono::milliseconds(0);
        }
    }

    for (auto& t : targets) {
        if (t.out->records.size() > 0) {
            svc.traffic.of(t.log->topic(), t.log->partition().value)
                .bytes_out.fetch_add(t.out->records.size(), std::memory_order_relaxed);
        }
    }

    if (version <= 3) {
        // Fetch v0-1 read magic 0 messages, v2-3 magic 1: convert the stored v2 batches.
        const std::int8_t magic = kafka::legacy_magic_for_fetch(version);
        for (auto& t : targets) {
            auto& pout = *t.out;
            if (pout.records.is_null() || pout.records.size() == 0) {
                continue;
            }
            auto bytes = read_records_into_memory(pout.records);
            if (!bytes) {
                pout.error_code = kafka::error_code::kafka_storage_error;
                pout.records = kafka::records::empty();
                continue;
            }
            auto converted = kafka::convert_batches_to_legacy(
                bytes->view(), magic, kafka::default_max_decompressed_bytes);
            if (!converted) {
                pout.error_code = kafka::error_code::corrupt_message;
                pout.records = kafka::records::empty();
                continue;
            }
            pout.records = kafka::records::copy_of(converted->view());
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
