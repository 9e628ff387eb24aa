// The Kafka APIs this front serves. Each handler is one file, handlers/<api>.cc, defining
// `declare` (what the request touches: the accesses the policy chain decides, accesses.h) and
// `handle`; its entry in SLUICE_KAFKA_APIS names the versions it serves (what ApiVersions
// advertises). A test checks that every range lies inside the codec's range for that API.
#pragma once

#include <algorithm>
#include <cstdint>

#include <boost/asio/awaitable.hpp>

#include "gateway/kafka/accesses.h"
#include "gateway/kafka/dispatcher.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/request_context.h"
#include "gateway/kafka/throttle.h"
#include "protocol/kafka/all_messages.h"

namespace sluice::gateway {

/// The one list of the APIs this front serves, ascending by API key: each entry declares
/// handler `<api>_handler` serving versions [lo, hi] of the generated <api> messages and
/// registers it (handler_registry() in registry.cc is built from the same list). A handler
/// file without an entry here does not compile; an entry without a handler does not link.
///
/// `declare(version, req, out)` appends to `out` what the decoded request touches, in an order
/// the handler's `handle` reads back by index from ctx.verdicts(); it sees nothing but the
/// request, so the Kafka proxy can run it on a request it only forwards.
#define SLUICE_KAFKA_APIS(X)                 \
    X(produce, 0, 12)                        \
    X(fetch, 0, 18)                          \
    X(list_offsets, 0, 10)                   \
    X(metadata, 0, 13)                       \
    X(offset_commit, 0, 9)                   \
    X(offset_fetch, 0, 9)                    \
    X(find_coordinator, 0, 6)                \
    X(join_group, 0, 9)                      \
    X(heartbeat, 0, 4)                       \
    X(leave_group, 0, 5)                     \
    X(sync_group, 0, 5)                      \
    X(describe_groups, 0, 6)                 \
    X(list_groups, 0, 5)                     \
    X(sasl_handshake, 0, 1)                  \
    X(api_versions, 0, 4)                    \
    X(create_topics, 0, 7)                   \
    X(delete_topics, 0, 6)                   \
    X(delete_records, 0, 2)                  \
    X(init_producer_id, 0, 5)                \
    X(offset_for_leader_epoch, 0, 4)         \
    X(add_partitions_to_txn, 0, 5)           \
    X(add_offsets_to_txn, 0, 4)              \
    X(end_txn, 0, 5)                         \
    X(txn_offset_commit, 0, 5)               \
    X(describe_acls, 0, 3)                   \
    X(create_acls, 0, 3)                     \
    X(delete_acls, 0, 3)                     \
    X(describe_configs, 0, 4)                \
    X(alter_configs, 0, 2)                   \
    X(describe_log_dirs, 0, 4)               \
    X(sasl_authenticate, 0, 2)               \
    X(create_partitions, 0, 3)               \
    X(delete_groups, 0, 2)                   \
    X(incremental_alter_configs, 0, 1)       \
    X(offset_delete, 0, 0)                   \
    X(describe_client_quotas, 0, 1)          \
    X(alter_client_quotas, 0, 1)             \
    X(describe_user_scram_credentials, 0, 0) \
    X(alter_user_scram_credentials, 0, 0)    \
    X(describe_cluster, 0, 2)                \
    X(describe_producers, 0, 0)              \
    X(describe_transactions, 0, 0)           \
    X(list_transactions, 0, 2)               \
    X(consumer_group_heartbeat, 0, 1)        \
    X(consumer_group_describe, 0, 1)

#define SLUICE_KAFKA_HANDLER(api, lo, hi)                                                  \
    struct api##_handler {                                                                 \
        using request = ::sluice::protocol::kafka::api##_request;                          \
        using response = ::sluice::protocol::kafka::api##_response;                        \
        static constexpr std::int16_t min_version = lo;                                    \
        static constexpr std::int16_t max_version = hi;                                    \
        static_assert(lo >= request::min_version && hi <= request::max_version,            \
                      "handler range outside the codec's range");                          \
        static void declare(std::int16_t version, const request& req, access_list& out);  \
        static boost::asio::awaitable<response> handle(request_context& ctx, request req); \
    };
SLUICE_KAFKA_APIS(SLUICE_KAFKA_HANDLER)
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
    // The policy chain, before the handler: its declared accesses, decided (and denials
    // audited) at once. Without an authorizer nothing is built.
    if (policy_enabled(ctx)) {
        access_list& accesses = reusable_access_list();
        H::declare(ctx.version(), req, accesses);
        ctx.set_verdicts(decide(ctx, accesses));
    }
    typename H::response resp = co_await H::handle(ctx, std::move(req));
    if (const std::int32_t ms = record_request_time(ctx); ms > 0) {
        if constexpr (requires { resp.throttle_time_ms; }) {
            resp.throttle_time_ms = std::max(resp.throttle_time_ms, ms);
        }
    }
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
