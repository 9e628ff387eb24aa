// The Kafka front's side of the policy chain. The dispatcher calls each handler's `declare`
// step (handlers/registry.h) on the decoded request, asks the chain (decide) for a verdict per
// declared access, and hands the verdicts to the handler (request_context::verdicts), which
// only answers Kafka's error for the denied parts. Where Kafka's rule needs the backend's
// answer first, a handler asks the same chain again: decide_late (a refused access, audited:
// Fetch v13+ by topic id, Metadata's auto-creation) or visible (a quiet filter: listings,
// authorized operations). Only the chain (gateway/policy/chain.h) calls the authorizer.
//
// With no authorizer the chain is one branch: nothing is declared, every verdict is allowed.
// Used on the connection's io thread only.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "auth/authorizer.h"
#include "gateway/kafka/accesses.h"
#include "gateway/kafka/request_context.h"
#include "gateway/policy/chain.h"
#include "gateway/policy/audit.h"

namespace sluice::gateway {

/// The policy chain over the broker's authorizer and quota meter (services::chain).
const policy_chain& kafka_chain(const request_context& ctx);

/// The chain's view of who sends the request: its principal, login mechanism, address, client
/// id. `host`: the authorizer's host when the caller has it, else empty (the chain derives it).
requester kafka_requester(const request_context& ctx, std::string_view host = {});

/// Whether the chain decides anything (an authorizer is configured).
bool policy_enabled(const request_context& ctx);

/// The list a declare step fills, empty, reused by the requests of this thread (its storage
/// is kept: no allocation per request). Valid until the next call on this thread.
access_list& reusable_access_list();

/// Decides the declared accesses through the chain, in order (only_if, unless: accesses.h);
/// the chain reports a refused access (audit log, rate-limited warn line), not a filtered one.
access_verdicts decide(const request_context& ctx, const access_list& accesses);

/// One access whose name the backend's answer gave: decided and reported like a declared one.
bool decide_late(const request_context& ctx, auth::acl_operation op, auth::resource_type type,
                 std::string_view name);

/// Whether the principal may see the resource: a quiet decision, never reported (a listing
/// leaves out what it may not see).
bool visible(const request_context& ctx, auth::acl_operation op, auth::resource_type type,
             std::string_view name);

/// Kafka's authorized-operations bit set (bit n set: AclOperation n allowed) for one resource,
/// over the operations Kafka reports for its type, each asked through `visible`. Without an
/// authorizer, all of them.
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

/// Why a CreateAcls or DeleteAcls request (`api`) is refused as a whole: no authorizer is
/// configured (SECURITY_DISABLED), or its declared ALTER on the cluster (access 0) was denied
/// (CLUSTER_AUTHORIZATION_FAILED). nullopt when it may go on.
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

/// The client's address as the authorizer's host ("127.0.0.1", IPv4-mapped addresses as IPv4).
std::string client_host(const request_context& ctx);

}  // namespace sluice::gateway
