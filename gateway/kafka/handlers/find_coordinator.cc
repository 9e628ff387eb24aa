// FindCoordinator: this broker coordinates every consumer group (key type 0) and every
// transactional id (key type 1). v4+ looks up several keys at once and answers one entry per
// key; any other key type is INVALID_REQUEST.
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/kafka_policy.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace kafka = protocol::kafka;

namespace {

constexpr std::int8_t group_key_type = 0;
constexpr std::int8_t transaction_key_type = 1;

bool known_key_type(std::int8_t t) { return t == group_key_type || t == transaction_key_type; }

/// The verdict on key `i` (declare): the error when refused, else none.
kafka::error_code refusal(const request_context& ctx, std::int8_t key_type, std::size_t i) {
    if (ctx.verdicts().allowed(i)) {
        return kafka::error_code::none;
    }
    return key_type == group_key_type ? kafka::error_code::group_authorization_failed
                                      : kafka::error_code::transactional_id_authorization_failed;
}

}  // namespace

/// DESCRIBE on the group (key type 0) or the transactional id (key type 1): the key (v0-3) or
/// each key (v4+), in request order. Nothing for an unknown key type (INVALID_REQUEST).
void find_coordinator_handler::declare(std::int16_t version, const request& req,
                                       access_list& out) {
    if (!known_key_type(req.key_type)) {
        return;
    }
    const auto type = req.key_type == group_key_type ? auth::resource_type::group
                                                     : auth::resource_type::transactional_id;
    if (version < 4) {
        out.add(auth::acl_operation::describe, type, req.key_);
        return;
    }
    for (const auto& key : req.coordinator_keys) {
        out.add(auth::acl_operation::describe, type, key);
    }
}

boost::asio::awaitable<find_coordinator_handler::response> find_coordinator_handler::handle(
    request_context& ctx, request req) {
    response resp;
    const node_id self(ctx.svc().kafka.node_id);
    auto [host, port] = advertised_kafka_address(ctx);
    if (ctx.version() < 4) {
        if (!known_key_type(req.key_type)) {
            resp.error_code = kafka::error_code::invalid_request;
            resp.error_message = "unknown key type " + std::to_string(req.key_type);
            resp.node_id = node_id(-1);
            resp.port = -1;
            co_return resp;
        }
        if (const auto denied = refusal(ctx, req.key_type, 0);
            denied != kafka::error_code::none) {
            resp.error_code = denied;
            resp.error_message = std::nullopt;
            resp.node_id = node_id(-1);
            resp.port = -1;
            co_return resp;
        }
        resp.error_code = kafka::error_code::none;
        resp.error_message = std::nullopt;
        resp.node_id = self;
        resp.host = host;
        resp.port = port;
        co_return resp;
    }
    for (std::size_t ki = 0; ki < req.coordinator_keys.size(); ++ki) {
        const auto& key = req.coordinator_keys[ki];
        auto& c = resp.coordinators.emplace_back();
        c.key = key;
        if (!known_key_type(req.key_type)) {
            c.error_code = kafka::error_code::invalid_request;
            c.error_message = "unknown key type " + std::to_string(req.key_type);
            c.node_id = node_id(-1);
            c.port = -1;
            continue;
        }
        if (const auto denied = refusal(ctx, req.key_type, ki);
            denied != kafka::error_code::none) {
            c.error_code = denied;
            c.error_message = std::nullopt;
            c.node_id = node_id(-1);
            c.port = -1;
            continue;
        }
        c.error_code = kafka::error_code::none;
        c.error_message = std::nullopt;
        c.node_id = self;
        c.host = host;
        c.port = port;
    }
    kafka_log().debug("conn {} client '{}': FindCoordinator v{} ({} keys)", ctx.connection().id,
                      ctx.client_id(), ctx.version(),
                      ctx.version() < 4 ? 1 : req.coordinator_keys.size());
    co_return resp;
}

}  // namespace sluice::gateway
