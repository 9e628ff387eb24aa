#include "gateway/policy/chain.h"

#include <atomic>
#include <cctype>

#include <fmt/format.h>

#include "gateway/core/logger.h"
#include "gateway/policy/audit.h"
#include "gateway/policy/quota_meter.h"

namespace sluice::gateway {
namespace {

// The log line of a refusal: a warn on the "auth" logger, at most a few per second across
// every front; the rest are counted and named in the next line (the audit log has them all).
constexpr std::int64_t denial_lines_per_second = 5;

std::atomic<std::int64_t> denial_window{0};    // the second of the current window
std::atomic<std::int64_t> denial_lines{0};     // lines written in it
std::atomic<std::int64_t> denials_dropped{0};  // denials not written since the last line

quota_front quota_front_of(policy_front f) {
    switch (f) {
        case policy_front::kafka: return quota_front::kafka;
        case policy_front::rest: return quota_front::http;
        case policy_front::console: return quota_front::http;
        case policy_front::websocket: return quota_front::websocket;
        case policy_front::sse: return quota_front::sse;
        case policy_front::sqs: return quota_front::sqs;
    }
    return quota_front::http;
}

std::string_view principal_of(const requester& who) {
    return who.principal.empty() ? std::string_view("User:ANONYMOUS") : who.principal;
}

audit_source audit_source_of(const requester& who) {
    return audit_source{std::string(principal_of(who)), audit_client_of(who.peer),
                        std::string(audit_front_name(who.front))};
}

void log_denial(const requester& who, std::string_view host, std::string_view action,
                const access& a) {
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
    auth_log().warn("denied: {} from {} {} on {} {} ({} {}){}", principal_of(who), host,
                    auth::to_string(a.op), auth::to_string(a.type), a.name,
                    audit_front_name(who.front), action,
                    dropped > 0 ? fmt::format(" ({} more denials not logged)", dropped)
                                : std::string());
}

/// The authorizer's host of a requester: its own, or derived from its address into `keep`.
std::string_view host_of(const requester& who, std::string& keep) {
    if (!who.host.empty()) {
        return who.host;
    }
    if (keep.empty()) {
        keep = authorizer_host(who.peer);
    }
    return keep;
}

}  // namespace

std::string_view audit_front_name(policy_front f) {
    switch (f) {
        case policy_front::kafka: return "kafka";
        case policy_front::rest: return "http";
        case policy_front::console: return "http";
        case policy_front::websocket: return "websocket";
        case policy_front::sse: return "sse";
        case policy_front::sqs: return "sqs";
    }
    return "http";
}

std::string denial_message(const access& a) {
    if (a.type == auth::resource_type::cluster) {
        return fmt::format("Not authorized to {} the cluster.", auth::to_string(a.op));
    }
    std::string type(auth::to_string(a.type));
    for (auto& ch : type) {
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    }
    return fmt::format("Not authorized to {} {} {}.", auth::to_string(a.op), type, a.name);
}

std::string authorizer_host(const boost::asio::ip::tcp::endpoint& peer) {
    auto addr = peer.address();
    if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
        addr = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, addr.to_v6());
    }
    return addr.to_string();
}

policy_chain::policy_chain(const auth::authorizer* authz, quota_meter* quotas)
    : authz_(authz != nullptr && authz->enabled() ? authz : nullptr), quotas_(quotas) {}

bool policy_chain::metering() const { return quotas_ != nullptr && quotas_->any(); }

decision policy_chain::decide(request_facts& facts) const {
    decision out;
    const requester& who = facts.who;
    // Authenticate: the front established a principal (its own mechanism did the work).
    if (who.principal.empty()) {
        out.authenticated = false;
        for (auto& a : facts.accesses) {
            a.result = verdict::unchecked;
        }
        return out;
    }
    // Authorize, and audit each refusal.
    if (authz_ != nullptr && !facts.accesses.empty()) {
        std::string host_kept;
        const std::string_view host = host_of(who, host_kept);
        bool stopped = false;
        for (auto& a : facts.accesses) {
            if (stopped) {
                a.result = verdict::unchecked;
                continue;
            }
            bool ok = authz_->allowed(who.principal, host, a.op, a.type, a.name);
            switch (a.alternative) {
                case also_passes::nothing: break;
                case also_passes::cluster:
                    ok = ok || authz_->allowed(who.principal, host, a.op,
                                               auth::resource_type::cluster,
                                               auth::cluster_resource_name);
                    break;
                case also_passes::write_on_any_topic:
                    ok = ok || authz_->allowed_any(who.principal, host, auth::acl_operation::write,
                                                   auth::resource_type::topic);
                    break;
            }
            if (ok) {
                a.result = verdict::allowed;
                continue;
            }
            if (a.denial == on_denial::filter) {
                a.result = verdict::hidden;
                continue;
            }
            a.result = verdict::denied;
            if (out.denied++ == 0) {
                out.first_denied = &a;
            }
            audit_authorization_denied(audit_source_of(who), a.op, a.type, a.name, facts.action);
            log_denial(who, host, facts.action, a);
            stopped = facts.all_or_nothing;
        }
        if (out.denied > 0 && facts.all_or_nothing) {
            return out;
        }
    }
    // Throttle: over a quota already, the request waits (or is refused: the front's call);
    // within, the bytes it brings are counted now.
    if (!metering()) {
        return out;
    }
    const auto front = quota_front_of(who.front);
    auto check = [&](auth::quota_kind kind) {
        const auto ms = quotas_->throttled_now(front, kind, principal_of(who), who.client_id);
        if (ms > out.delay) {
            out.delay = ms;
            out.throttled_by = kind;
        }
    };
    constexpr auto request_time = auth::quota_kind::request_percentage;
    if (facts.request_time && quotas_->applies(request_time, principal_of(who), who.client_id)) {
        out.meter_request_time = true;
        check(request_time);
        if (out.delay.count() > 0) {
            return out;
        }
    }
    if (facts.byte_quota) {
        check(*facts.byte_quota);
        if (out.delay.count() <= 0 && facts.bytes > 0) {
            quotas_->record(front, *facts.byte_quota, principal_of(who), who.client_id,
                            facts.bytes);
        }
    }
    return out;
}

bool policy_chain::visible(const requester& who, auth::acl_operation op, auth::resource_type type,
                           std::string_view name) const {
    if (authz_ == nullptr) {
        return true;
    }
    std::string host_kept;
    return authz_->allowed(principal_of(who), host_of(who, host_kept), op, type, name);
}

std::int32_t policy_chain::authorized_operations(const requester& who, auth::resource_type type,
                                                 std::string_view name,
                                                 std::span<const auth::acl_operation> ops) const {
    std::int32_t bits = 0;
    std::string host_kept;
    for (const auto op : ops) {
        if (authz_ == nullptr ||
            authz_->allowed(principal_of(who), host_of(who, host_kept), op, type, name)) {
            bits |= std::int32_t{1} << static_cast<int>(op);
        }
    }
    return bits;
}

void policy_chain::report_denied(const requester& who, std::string_view action,
                                 const access& a) const {
    audit_authorization_denied(audit_source_of(who), a.op, a.type, a.name, action);
    std::string host_kept;
    log_denial(who, host_of(who, host_kept), action, a);
}

void policy_chain::authentication_failed(const requester& who, std::string_view mechanism,
                                         std::string_view user, std::string_view reason) const {
    audit_authentication_failed(audit_source_of(who), mechanism, user, reason);
}

std::chrono::milliseconds policy_chain::record(const requester& who, auth::quota_kind kind,
                                               double amount) const {
    if (!metering()) {
        return std::chrono::milliseconds(0);
    }
    return quotas_->record(quota_front_of(who.front), kind, principal_of(who), who.client_id,
                           amount);
}

std::chrono::milliseconds policy_chain::throttled_now(const requester& who,
                                                      auth::quota_kind kind) const {
    if (!metering()) {
        return std::chrono::milliseconds(0);
    }
    return quotas_->throttled_now(quota_front_of(who.front), kind, principal_of(who),
                                  who.client_id);
}

bool policy_chain::quota_applies(const requester& who, auth::quota_kind kind) const {
    return metering() && quotas_->applies(kind, principal_of(who), who.client_id);
}

std::chrono::milliseconds policy_chain::record_request_time(const requester& who,
                                                            std::chrono::nanoseconds busy) const {
    if (quotas_ == nullptr) {
        return std::chrono::milliseconds(0);
    }
    return quotas_->record_request_time(quota_front_of(who.front), principal_of(who),
                                        who.client_id, busy);
}

std::optional<double> policy_chain::headroom(const requester& who, auth::quota_kind kind) const {
    if (!metering()) {
        return std::nullopt;
    }
    return quotas_->headroom(kind, principal_of(who), who.client_id);
}

}  // namespace sluice::gateway
