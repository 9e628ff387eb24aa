// AlterClientQuotas (KIP-546): ALTER_CONFIGS on the cluster; each entry is checked on its own
// (a bad entity or an unknown key: INVALID_REQUEST; a value that is not a positive number:
// INVALID_CONFIG) and a refused entry changes nothing. The valid entries are stored in
// DATA_DIR/quotas before the answer and are in force at once. validate_only checks only.
#include <stdexcept>

#include "gateway/kafka/authz.h"
#include "gateway/kafka/handlers/registry.h"
#include "gateway/kafka/logger.h"
#include "gateway/core/logger.h"
#include "gateway/policy/quota_meter.h"

namespace sluice::gateway {
namespace {

/// Called once per entity after its quotas were changed and saved (not for validate_only):
/// the hook for the audit log, which records who changed which quota.
void on_client_quotas_altered(request_context& ctx, const auth::quota_entity& entity,
                              const std::vector<auth::quota_op>& ops) {
    std::string what;
    for (const auto& op : ops) {
        what += (what.empty() ? "" : ", ") + op.key +
                (op.remove ? std::string(" removed") : "=" + std::to_string(op.value));
    }
    auth_log().info("client quotas of {} changed by {}: {}", auth::describe(entity),
                    ctx.principal(), what);
    audit_client_quotas_changed(audit_source_of(ctx), entity, ops);
}

}  // namespace

boost::asio::awaitable<alter_client_quotas_handler::response> alter_client_quotas_handler::handle(
    request_context& ctx, request req) {
    using protocol::kafka::error_code;
    response resp;
    const bool allowed = authorize_cluster(ctx, auth::acl_operation::alter_configs);
    std::vector<std::pair<auth::quota_entity, std::vector<auth::quota_op>>> changes;
    std::vector<std::size_t> change_at;  // the response entry of each change
    for (auto& entry : req.entries) {
        auto& out = resp.entries.emplace_back();
        std::vector<std::pair<std::string, std::optional<std::string>>> parts;
        for (const auto& e : entry.entity) {
            out.entity.push_back({e.entity_type, e.entity_name, {}});
            parts.emplace_back(e.entity_type, e.entity_name);
        }
        out.error_message = std::nullopt;
        if (!allowed) {
            out.error_code = error_code::cluster_authorization_failed;
            out.error_message = "AlterClientQuotas needs ALTER_CONFIGS on the cluster";
            continue;
        }
        auth::quota_entity entity;
        std::vector<auth::quota_op> ops;
        for (auto& op : entry.ops) {
            ops.push_back({std::move(op.key), op.value, op.remove});
        }
        auto bad = auth::parse_entity(parts, entity);
        if (!bad) {
            bad = auth::client_quotas::validate(ops);
        }
        if (!bad && ctx.svc().quotas == nullptr) {
            bad = auth::quota_error{auth::quota_error::code::invalid_request,
                                    "client quotas are not available on this listener"};
        }
        if (bad) {
            out.error_code = bad->what == auth::quota_error::code::invalid_config
                                 ? error_code::invalid_config
                                 : error_code::invalid_request;
            out.error_message = bad->message;
            continue;
        }
        out.error_code = error_code::none;
        if (!req.validate_only) {
            changes.emplace_back(std::move(entity), std::move(ops));
            change_at.push_back(resp.entries.size() - 1);
        }
    }
    if (changes.empty()) {
        co_return resp;
    }
    try {
        ctx.svc().quotas->quotas().alter(changes);
    } catch (const std::runtime_error& e) {
        kafka_log().error("AlterClientQuotas: cannot save the quotas: {}", e.what());
        for (std::size_t i : change_at) {
            resp.entries[i].error_code = error_code::unknown_server_error;
            resp.entries[i].error_message = "cannot save the quotas";
        }
        co_return resp;
    }
    for (const auto& [entity, ops] : changes) {
        on_client_quotas_altered(ctx, entity, ops);
    }
    co_return resp;
}

}  // namespace sluice::gateway
