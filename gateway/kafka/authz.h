// The Kafka front's authorization checks: the request's principal and client address against
// the authorizer (auth/authorizer.h), with a rate-limited warn line per denial and a line in the
// audit log (gateway/policy/audit.h) for every one. When the authorizer is off every check is
// one branch and returns true.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "auth/authorizer.h"
#include "gateway/kafka/request_context.h"
#include "gateway/policy/audit.h"

namespace sluice::gateway {

/// Where a denied request is reported: a warn line on the "auth" logger (at most a few per
/// second, the rest counted) and, for every denial, the audit log.
void audit_denied(const request_context& ctx, auth::acl_operation op, auth::resource_type type,
                  std::string_view name);

/// Whether the principal may do `op` on the resource, without reporting a denial (filtering
/// listings, where a hidden resource is not a refused request).
bool authorized_quietly(const request_context& ctx, auth::acl_operation op,
                        auth::resource_type type, std::string_view name);

/// Whether the principal may do `op` on the resource; a denial is reported (audit_denied).
inline bool authorize(const request_context& ctx, auth::acl_operation op,
                      auth::resource_type type, std::string_view name) {
    if (!ctx.svc().authz.enabled()) {
        return true;
    }
    if (authorized_quietly(ctx, op, type, name)) {
        return true;
    }
    audit_denied(ctx, op, type, name);
    return false;
}

inline bool authorize_cluster(const request_context& ctx, auth::acl_operation op) {
    return authorize(ctx, op, auth::resource_type::cluster, auth::cluster_resource_name);
}

/// Kafka's rule for creating topics: CREATE on the cluster, else CREATE on the topic.
inline bool authorize_create_topic(const request_context& ctx, std::string_view topic) {
    if (!ctx.svc().authz.enabled() ||
        authorized_quietly(ctx, auth::acl_operation::create, auth::resource_type::cluster,
                           auth::cluster_resource_name)) {
        return true;
    }
    return authorize(ctx, auth::acl_operation::create, auth::resource_type::topic, topic);
}

/// Why a CreateAcls or DeleteAcls request (`api`) is refused as a whole: no authorizer is
/// configured (SECURITY_DISABLED), or the principal may not ALTER the cluster
/// (CLUSTER_AUTHORIZATION_FAILED, reported). nullopt when it may go on.
struct acl_change_refusal {
    protocol::kafka::error_code code;
    std::string message;
};
std::optional<acl_change_refusal> refuse_acl_change(const request_context& ctx,
                                                    std::string_view api);

/// One entry per request entry in `results`, each carrying `code` and `message` (an answer
/// refused as a whole).
template <typename Results>
void fail_each(Results& results, std::size_t count, protocol::kafka::error_code code,
               const std::string& message) {
    results.clear();
    for (std::size_t i = 0; i < count; ++i) {
        auto& r = results.emplace_back();
        r.error_code = code;
        r.error_message = message;
    }
}

/// The audit log's source of a request: its principal, "ADDRESS:PORT", front kafka.
audit_source audit_source_of(const request_context& ctx);
/// The request's API by Kafka's name ("Produce").
std::string_view api_name_of(const request_context& ctx);

/// Kafka's authorized-operations bit set (bit n set: AclOperation n allowed) for one resource,
/// over the operations Kafka reports for its type. Without an authorizer, all of them.
std::int32_t authorized_operations(const request_context& ctx, auth::resource_type type,
                                   std::string_view name,
                                   std::span<const auth::acl_operation> ops);

/// The operations Kafka reports for a topic, a group and the cluster (sluice has no delegation
/// tokens, so the cluster's CREATE_TOKENS and DESCRIBE_TOKENS are never reported).
inline constexpr std::array<auth::acl_operation, 8> topic_operations = {
    auth::acl_operation::read,             auth::acl_operation::write,
    auth::acl_operation::create,           auth::acl_operation::remove,
    auth::acl_operation::alter,            auth::acl_operation::describe,
    auth::acl_operation::describe_configs, auth::acl_operation::alter_configs};
inline constexpr std::array<auth::acl_operation, 3> group_operations = {
    auth::acl_operation::read, auth::acl_operation::describe, auth::acl_operation::remove};
inline constexpr std::array<auth::acl_operation, 7> cluster_operations = {
    auth::acl_operation::create,           auth::acl_operation::alter,
    auth::acl_operation::describe,         auth::acl_operation::cluster_action,
    auth::acl_operation::describe_configs, auth::acl_operation::alter_configs,
    auth::acl_operation::idempotent_write};

/// The client's address as the authorizer's host ("127.0.0.1", IPv4-mapped addresses as IPv4).
std::string client_host(const request_context& ctx);

}  // namespace sluice::gateway
