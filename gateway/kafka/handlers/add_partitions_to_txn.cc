// AddPartitionsToTxn: registers partitions with the producer's ongoing transaction before it
// writes to them. v0-3 (clients) carry one transaction; v4+ (broker verification, KIP-890)
// batch several and may only verify. Unknown partitions get UNKNOWN_TOPIC_OR_PARTITION and the
// rest OPERATION_NOT_ATTEMPTED, as Kafka answers.
#include "backend/api/topics.h"
#include "backend/api/transactions.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/handlers/txn_support.h"
#include "gateway/kafka/kafka_policy.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;
namespace api = backend::api;

namespace {

using topic_result = add_partitions_to_txn_handler::response::add_partitions_to_txn_topic_result;
using topic_in = add_partitions_to_txn_handler::request::add_partitions_to_txn_topic;

boost::asio::awaitable<std::vector<topic_result>> add_one(request_context& ctx,
                                                          std::string txn_id,
                                                          api::producer_identity producer,
                                                          std::vector<topic_in> topics,
                                                          bool verify_only, std::size_t at) {
    const std::int16_t version = ctx.version();
    std::vector<api::txn_partition> parts;
    std::vector<std::pair<std::size_t, std::size_t>> where;
    std::vector<topic_result> out;
    bool unknown = false;
    // The verdicts from `at` (declare): the transactional id (else every partition fails),
    // then each topic.
    const bool txn_denied = ctx.verdicts().denied(at);
    for (std::size_t ti = 0; ti < topics.size(); ++ti) {
        const auto& t = topics[ti];
        auto& tr = out.emplace_back();
        tr.name = t.name;
        const bool topic_denied = txn_denied || ctx.verdicts().denied(at + 1 + ti);
        auto info = co_await ctx.svc().topics.describe(topic_name(t.name));
        for (auto p : t.partitions) {
            auto& pr = tr.results_by_partition.emplace_back();
            pr.partition_index = p;
            pr.partition_error_code = kafka::error_code::none;
            if (topic_denied) {
                pr.partition_error_code =
                    txn_denied ? kafka::error_code::transactional_id_authorization_failed
                               : kafka::error_code::topic_authorization_failed;
                unknown = true;
                continue;
            }
            if (!info || p.value < 0 || p.value >= info->partitions || info->internal) {
                pr.partition_error_code = kafka::error_code::unknown_topic_or_partition;
                unknown = true;
                continue;
            }
            where.emplace_back(out.size() - 1, tr.results_by_partition.size() - 1);
            parts.push_back({topic_name(t.name), p});
        }
    }
    if (unknown) {
        for (auto [ti, pi] : where) {
            out[ti].results_by_partition[pi].partition_error_code =
                kafka::error_code::operation_not_attempted;
        }
        co_return out;
    }
    auto errors = co_await ctx.svc().txn.add_partitions(transactional_id(std::move(txn_id)),
                                                        producer, std::move(parts), verify_only);
    for (std::size_t i = 0; i < where.size(); ++i) {
        auto [ti, pi] = where[i];
        out[ti].results_by_partition[pi].partition_error_code =
            txn_error(errors[i], version, 2, 5);
    }
    co_return out;
}

}  // namespace

namespace {

/// WRITE on the transactional id, then WRITE on each of its topics, asked only when the id
/// was allowed.
template <typename Topics>
void declare_transaction(const std::string& txn_id, const Topics& topics, access_list& out) {
    const auto txn = out.add(auth::acl_operation::write, auth::resource_type::transactional_id,
                             txn_id);
    for (const auto& t : topics) {
        out.add(auth::acl_operation::write, auth::resource_type::topic, t.name);
        out.only_if(txn);
    }
}

}  // namespace

/// v0-3: one transaction; v4+: each transaction in request order, each as declare_transaction.
void add_partitions_to_txn_handler::declare(std::int16_t version, const request& req,
                                            access_list& out) {
    if (version <= 3) {
        declare_transaction(req.v3_and_below_transactional_id, req.v3_and_below_topics, out);
        return;
    }
    for (const auto& t : req.transactions) {
        declare_transaction(t.transactional_id, t.topics, out);
    }
}

boost::asio::awaitable<add_partitions_to_txn_handler::response>
add_partitions_to_txn_handler::handle(request_context& ctx, request req) {
    response resp;
    resp.error_code = kafka::error_code::none;
    if (ctx.version() <= 3) {
        resp.results_by_topic_v3_and_below = co_await add_one(
            ctx, req.v3_and_below_transactional_id,
            {req.v3_and_below_producer_id, req.v3_and_below_producer_epoch},
            std::move(req.v3_and_below_topics), false, 0);
        co_return resp;
    }
    std::size_t at = 0;  // the first verdict of this transaction
    for (auto& t : req.transactions) {
        auto& r = resp.results_by_transaction.emplace_back();
        r.transactional_id = t.transactional_id;
        const std::size_t next = at + 1 + t.topics.size();
        r.topic_results = co_await add_one(ctx, t.transactional_id,
                                           {t.producer_id, t.producer_epoch}, std::move(t.topics),
                                           t.verify_only, at);
        at = next;
    }
    co_return resp;
}

}  // namespace sluice::gateway
