// ListTransactions (KIP-664): the transactions this coordinator knows, filtered by state,
// producer id, minimum running time (v1, KIP-994) and transactional id pattern (v2, KIP-1152;
// the backend matches it with RE2, in linear time). Lists only the transactional ids the
// principal may DESCRIBE (as Kafka); a hidden id is not a denial, so none is reported.
#include "backend/api/transactions.h"
#include "gateway/kafka/error_mapping.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

/// Nothing: the listing is filtered quietly (visible) by DESCRIBE on each transactional id.
void list_transactions_handler::declare(std::int16_t, const request&, access_list&) {}

boost::asio::awaitable<list_transactions_handler::response> list_transactions_handler::handle(
    request_context& ctx, request req) {
    response resp;
    resp.error_code = kafka::error_code::none;
    api::transaction_filter filter;
    filter.states = req.state_filters;
    filter.producers = req.producer_id_filters;
    filter.min_duration_ms = req.duration_filter.count();
    filter.id_pattern = req.transactional_id_pattern;
    auto listed = co_await ctx.svc().txn.list(std::move(filter));
    if (!listed) {
        resp.error_code = to_kafka(listed.error());
        co_return resp;
    }
    resp.unknown_state_filters = std::move(listed->unknown_states);
    for (auto& l : listed->transactions) {
        if (!visible(ctx, auth::acl_operation::describe, auth::resource_type::transactional_id,
                     l.txn_id.value)) {
            continue;
        }
        auto& s = resp.transaction_states.emplace_back();
        s.transactional_id = std::move(l.txn_id.value);
        s.producer_id = l.producer;
        s.transaction_state = std::move(l.state);
    }
    co_return resp;
}

}  // namespace sluice::gateway
