// The Kafka APIs this front serves. Each handler is one file, handlers/<api>.cc, defining
// `handle`; its entry here names the versions it serves (what ApiVersions advertises).
// A test checks that every range lies inside the codec's range for that API.
#pragma once

#include <cstdint>

#include <boost/asio/awaitable.hpp>

#include "gateway/kafka/dispatcher.h"
#include "gateway/kafka/request_context.h"
#include "protocol/kafka/all_messages.h"

namespace sluice::gateway {

/// Declares handler `<api>_handler` serving versions [lo, hi] of the generated <api> messages.
#define SLUICE_KAFKA_HANDLER(api, lo, hi)                                                  \
    struct api##_handler {                                                                 \
        using request = ::sluice::protocol::kafka::api##_request;                          \
        using response = ::sluice::protocol::kafka::api##_response;                        \
        static constexpr std::int16_t min_version = lo;                                    \
        static constexpr std::int16_t max_version = hi;                                    \
        static_assert(lo >= request::min_version && hi <= request::max_version,            \
                      "handler range outside the codec's range");                          \
        static boost::asio::awaitable<response> handle(request_context& ctx, request req); \
    }

SLUICE_KAFKA_HANDLER(produce, 0, 12);
SLUICE_KAFKA_HANDLER(fetch, 0, 18);
SLUICE_KAFKA_HANDLER(list_offsets, 0, 10);
SLUICE_KAFKA_HANDLER(metadata, 0, 13);
SLUICE_KAFKA_HANDLER(offset_commit, 0, 9);
SLUICE_KAFKA_HANDLER(offset_fetch, 0, 9);
SLUICE_KAFKA_HANDLER(find_coordinator, 0, 6);
SLUICE_KAFKA_HANDLER(join_group, 0, 9);
SLUICE_KAFKA_HANDLER(heartbeat, 0, 4);
SLUICE_KAFKA_HANDLER(leave_group, 0, 5);
SLUICE_KAFKA_HANDLER(sync_group, 0, 5);
SLUICE_KAFKA_HANDLER(describe_groups, 0, 6);
SLUICE_KAFKA_HANDLER(list_groups, 0, 5);
SLUICE_KAFKA_HANDLER(api_versions, 0, 4);
SLUICE_KAFKA_HANDLER(create_topics, 0, 7);
SLUICE_KAFKA_HANDLER(delete_topics, 0, 6);
SLUICE_KAFKA_HANDLER(delete_records, 0, 2);
SLUICE_KAFKA_HANDLER(init_producer_id, 0, 5);
SLUICE_KAFKA_HANDLER(offset_for_leader_epoch, 0, 4);
SLUICE_KAFKA_HANDLER(add_partitions_to_txn, 0, 5);
SLUICE_KAFKA_HANDLER(add_offsets_to_txn, 0, 4);
SLUICE_KAFKA_HANDLER(end_txn, 0, 5);
SLUICE_KAFKA_HANDLER(txn_offset_commit, 0, 5);
SLUICE_KAFKA_HANDLER(describe_configs, 0, 4);
SLUICE_KAFKA_HANDLER(alter_configs, 0, 2);
SLUICE_KAFKA_HANDLER(describe_log_dirs, 0, 4);
SLUICE_KAFKA_HANDLER(create_partitions, 0, 3);
SLUICE_KAFKA_HANDLER(delete_groups, 0, 2);
SLUICE_KAFKA_HANDLER(incremental_alter_configs, 0, 1);
SLUICE_KAFKA_HANDLER(offset_delete, 0, 0);
SLUICE_KAFKA_HANDLER(describe_cluster, 0, 2);
SLUICE_KAFKA_HANDLER(describe_producers, 0, 0);
SLUICE_KAFKA_HANDLER(describe_transactions, 0, 0);
SLUICE_KAFKA_HANDLER(list_transactions, 0, 2);
SLUICE_KAFKA_HANDLER(consumer_group_heartbeat, 0, 1);
SLUICE_KAFKA_HANDLER(consumer_group_describe, 0, 1);

#undef SLUICE_KAFKA_HANDLER

/// Decodes H's request, runs H, encodes its response (unless the handler suppressed it).
template <typename H>
boost::asio::awaitable<bool> invoke_handler(request_context& ctx, protocol::reader& r,
                                            protocol::writer& w) {
    typename H::request req;
    req.decode(r, ctx.version());
    if (!r.ok()) {
        co_return false;
    }
    typename H::response resp = co_await H::handle(ctx, std::move(req));
    if (!ctx.response_suppressed()) {
        resp.encode(w, ctx.version());
    }
    co_return true;
}

template <typename H>
constexpr handler_entry entry_for() {
    return handler_entry{static_cast<std::int16_t>(H::request::key), H::min_version,
                         H::max_version, &invoke_handler<H>};
}

}  // namespace sluice::gateway
