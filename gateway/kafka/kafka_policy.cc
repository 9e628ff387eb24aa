#include "gateway/kafka/kafka_policy.h"

#include <atomic>
#include <chrono>

#include "gateway/kafka/logger.h"
#include "protocol/kafka/api_table.h"

namespace sluice::gateway {
namespace {

constexpr std::int64_t denial_lines_per_second = 5;

std::atomic<std::int64_t> denial_window{0};   // the second of the current window
std::atomic<std::int64_t> denial_lines{0};    // lines written in it
std::atomic<std::int64_t> denials_dropped{0};  // denials not written since the last line

/// A refused access: a line in the audit log for every one, and a warn line on the "auth"
/// logger (at most a few per second, the rest counted).
void report_denied(const request_context& ctx, std::string_view host, auth::acl_operation op,
                   auth::resource_type type, std::string_view name) {
    audit_authorization_denied(audit_source_of(ctx), op, type, name, api_name_of(ctx));
    const std::int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
    std::int64_t window = denial_window.load(std::memory_order_relaxed);
    if (window != now && denial_window.compare_exchange_strong(window, now)) {
        denial_lines.store(0, std::memory_order_relaxed);
    }
    if (denial_lines.fetch_add(1, std::memory_order_relaxed) >= denial_lines_per_second) {
        denials_dropped.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    const std::int64_t dropped = denials_dropped.exchange(0, std::memory_order_relaxed);
    auth_log().warn("denied: {} from {} {} on {} {} (api key {}){}", ctx.principal(), host,
                    auth::to_string(op), auth::to_string(type), name, ctx.header().api_key,
                    dropped > 0 ? fmt::format(" ({} more denials not logged)", dropped)
                                : std::string());
}

/// One decision of the authorizer (on), reported when refused and `report`.
bool decide_one(const request_context& ctx, const auth::authorizer& a, std::string_view host,
                const kafka_access& acc) {
    const bool ok = acc.any_name ? a.allowed_any(ctx.principal(), host, acc.op, acc.type)
                                 : a.allowed(ctx.principal(), host, acc.op, acc.type, acc.name);
    if (!ok && acc.mode == access_mode::refuse) {
        report_denied(ctx, host, acc.op, acc.type, acc.name);
    }
    return ok;
}

}  // namespace

std::string client_host(const request_context& ctx) {
    auto addr = ctx.connection().peer.address();
    if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
        addr = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, addr.to_v6());
    }
    return addr.to_string();
}

audit_source audit_source_of(const request_context& ctx) {
    const std::string& p = ctx.principal();
    return audit_source{p.empty() ? std::string("User:ANONYMOUS") : p,
                        audit_client_of(ctx.connection().peer),
                        "kafka"};
}

std::string_view api_name_of(const request_context& ctx) {
    return protocol::kafka::api_name(static_cast<protocol::kafka::api_key>(ctx.header().api_key));
}

access_list& reusable_access_list() {
    thread_local access_list list;
    list.clear();
    return list;
}

bool policy_enabled(const request_context& ctx) { return ctx.svc().authz.enabled(); }

access_verdicts decide(const request_context& ctx, const access_list& accesses) {
    const auth::authorizer& a = ctx.svc().authz;
    access_verdicts out;
    if (!a.enabled() || accesses.empty()) {
        return out;
    }
    out.reserve(accesses.size());
    const std::string host = client_host(ctx);
    for (std::size_t i = 0; i < accesses.size(); ++i) {
        const kafka_access& acc = accesses[i];
        SLUICE_CHECK(acc.only_if == no_access || acc.only_if < i);
        SLUICE_CHECK(acc.unless == no_access || acc.unless < i);
        if (acc.later || (acc.only_if != no_access && !out.allowed(acc.only_if))) {
            out.push_back(verdict::skipped);
        } else if (acc.unchecked || (acc.unless != no_access && out.allowed(acc.unless))) {
            out.push_back(verdict::allowed);
        } else {
            out.push_back(decide_one(ctx, a, host, acc) ? verdict::allowed : verdict::denied);
        }
    }
    return out;
}

bool decide_late(const request_context& ctx, auth::acl_operation op, auth::resource_type type,
                 std::string_view name) {
    const auth::authorizer& a = ctx.svc().authz;
    if (!a.enabled()) {
        return true;
    }
    return decide_one(ctx, a, client_host(ctx), {op, type, name, access_mode::refuse});
}

bool visible(const request_context& ctx, auth::acl_operation op, auth::resource_type type,
             std::string_view name) {
    const auth::authorizer& a = ctx.svc().authz;
    if (!a.enabled()) {
        return true;
    }
    return a.allowed(ctx.principal(), client_host(ctx), op, type, name);
}

std::int32_t authorized_operations(const request_context& ctx, auth::resource_type type,
                                   std::string_view name,
                                   std::span<const auth::acl_operation> ops) {
    std::int32_t bits = 0;
    for (const auth::acl_operation op : ops) {
        if (visible(ctx, op, type, name)) {
            bits |= std::int32_t{1} << static_cast<int>(op);
        }
    }
    return bits;
}

std::optional<acl_change_refusal> refuse_acl_change(const request_context& ctx,
                                                    std::string_view api) {
    using protocol::kafka::error_code;
    if (!policy_enabled(ctx)) {
        return acl_change_refusal{error_code::security_disabled,
                                  "no authorizer is configured on the broker"};
    }
    if (ctx.verdicts().denied(0)) {
        return acl_change_refusal{error_code::cluster_authorization_failed,
                                  std::string(api) + " needs ALTER on the cluster"};
    }
    return std::nullopt;
}

}  // namespace sluice::gateway
