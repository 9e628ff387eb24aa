// ListTransactions (KIP-664): the transactions this coordinator knows, filtered by state,
// producer id, minimum running time (v1, KIP-994) and transactional id pattern (v2, KIP-1152).
#include <regex>

#include "backend/producer/transaction_coordinator.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/handlers/txn_support.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace bp = backend::producer;

boost::asio::awaitable<list_transactions_handler::response> list_transactions_handler::handle(
    request_context& ctx, request req) {
    response resp;
    resp.error_code = kafka::error_code::none;
    if (!has_txn(ctx)) {
        resp.error_code = kafka::error_code::coordinator_not_available;
        co_return resp;
    }
    std::vector<bp::txn_state> states;
    for (const auto& name : req.state_filters) {
        if (auto s = bp::parse_txn_state(name)) {
            states.push_back(*s);
        } else {
            resp.unknown_state_filters.push_back(name);
        }
    }
    if (!req.state_filters.empty() && states.empty()) {
        co_return resp;  // only unknown states: nothing matches
    }
    std::vector<std::int64_t> pids;
    for (auto p : req.producer_id_filters) {
        pids.push_back(p.value);
    }
    std::function<bool(const std::string&)> id_filter;
    std::optional<std::regex> pattern;
    if (req.transactional_id_pattern && !req.transactional_id_pattern->empty()) {
        try {
            pattern.emplace(*req.transactional_id_pattern);
        } catch (const std::regex_error&) {
            resp.error_code = kafka::error_code::invalid_regular_expression;
            co_return resp;
        }
        id_filter = [&pattern](const std::string& id) { return std::regex_match(id, *pattern); };
    }
    for (auto& l : ctx.svc().txn->list(states, pids, req.duration_filter.count(), id_filter)) {
        auto& s = resp.transaction_states.emplace_back();
        s.transactional_id = l.transactional_id;
        s.producer_id = producer_id(l.producer_id);
        s.transaction_state = bp::txn_state_name(l.state);
    }
    co_return resp;
}

}  // namespace sluice::gateway
