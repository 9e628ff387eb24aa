// ApiVersions: the versions of every API we serve, identical on every connection, and (v3+)
// the features: like Kafka 4, the transaction.version feature (KIP-890), supported 0-2 and
// finalized at the configured level, from which Java 4.x and franz-go decide whether to use
// transaction version 2 (Produce v12 + EndTxn v5 + TxnOffsetCommit v5).
#include "backend/api/transactions.h"
#include "gateway/kafka/handlers/registry.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

/// Nothing: served before and during the login, to anyone.
void api_versions_handler::declare(std::int16_t, const request&, access_list&) {}

boost::asio::awaitable<api_versions_handler::response> api_versions_handler::handle(
    request_context& ctx, request) {
    response resp;
    resp.error_code = kafka::error_code::none;
    for (const auto& h : handler_registry()) {
        resp.api_keys.push_back(
            {static_cast<kafka::api_key>(h.api_key), h.min_version, h.max_version, {}});
    }
    if (ctx.version() >= 3) {
        // compat: Kafka omits a feature whose finalized level is 0 (KAFKA-16192), and clients
        // only trust finalized features whose epoch is >= 0.
        resp.supported_features.push_back({"transaction.version", 0, 2, {}});
        const std::int16_t level = ctx.svc().txn.transaction_version();
        resp.finalized_features_epoch = 1;
        if (level > 0) {
            resp.finalized_features.push_back({"transaction.version", level, level, {}});
        }
    }
    co_return resp;
}

}  // namespace sluice::gateway
