#include "gateway/kafka/authz.h"

#include <atomic>
#include <chrono>

#include "gateway/core/logger.h"
#include "protocol/kafka/api_table.h"

namespace sluice::gateway {
namespace {

constexpr std::int64_t denial_lines_per_second = 5;

std::atomic<std::int64_t> denial_window{0};   // the second of the current window
std::atomic<std::int64_t> denial_lines{0};    // lines written in it
std::atomic<std::int64_t> denials_dropped{0};  // denials not written since the last line

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

bool authorized_quietly(const request_context& ctx, auth::acl_operation op,
                        auth::resource_type type, std::string_view name) {
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
        if (authorized_quietly(ctx, op, type, name)) {
            bits |= std::int32_t{1} << static_cast<int>(op);
        }
    }
    return bits;
}

void audit_denied(const request_context& ctx, auth::acl_operation op, auth::resource_type type,
                  std::string_view name) {
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
    auth_log().warn("denied: {} from {} {} on {} {} (api key {}){}", ctx.principal(),
                    client_host(ctx), auth::to_string(op), auth::to_string(type), name,
                    ctx.header().api_key,
                    dropped > 0 ? fmt::format(" ({} more denials not logged)", dropped)
                                : std::string());
}

std::optional<acl_change_refusal> refuse_acl_change(const request_context& ctx,
                                                    std::string_view api) {
    using protocol::kafka::error_code;
    if (!ctx.svc().authz.enabled()) {
        return acl_change_refusal{error_code::security_disabled,
                                  "no authorizer is configured on the broker"};
    }
    if (!authorize_cluster(ctx, auth::acl_operation::alter)) {
        return acl_change_refusal{error_code::cluster_authorization_failed,
                                  std::string(api) + " needs ALTER on the cluster"};
    }
    return std::nullopt;
}

}  // namespace sluice::gateway
