// What every front calls to apply the client quotas (auth/client_quotas.h): record a request's
// bytes against the principal's quota and learn its throttle time, counted in the metrics
// (sluice_quota_bytes_total, sluice_quota_request_time_seconds_total,
// sluice_throttle_time_seconds_total, sluice_throttled_requests_total by front and quota) with one warn line at most per minute, not one per request.
// Built by run_server next to the quotas; shared by every connection. Thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/core/config.h"
#include "gateway/core/metrics.h"

#include "auth/client_quotas.h"

namespace sluice::gateway {

/// The fronts that record against the quotas (the `front` label).
enum class quota_front : std::uint8_t { kafka = 0, http, websocket, sse, sqs };
inline constexpr std::size_t quota_front_count = 5;

/// quota.window.num, quota.window.size.seconds, quota.producer.default, quota.consumer.default.
/// Throws config_error on a bad value.
auth::quota_settings read_quota_settings(const config& cfg);

/// The quota user of a principal: "User:alice" -> "alice"; none -> "ANONYMOUS" (Kafka's
/// sanitized user name of an unauthenticated session).
std::string quota_user(std::string_view principal);

class quota_meter {
public:
    quota_meter(auth::client_quotas& quotas, metrics_registry& metrics);

    auth::client_quotas& quotas() { return quotas_; }
    bool any() const { return quotas_.any(); }

    /// Records `amount` of `kind` for (principal, client_id) and returns the throttle time it
    /// earned (zero when within the quota or when there is none).
    std::chrono::milliseconds record(quota_front front, auth::quota_kind kind,
                                     std::string_view principal, std::string_view client_id,
                                     double amount);
    /// The throttle time (principal, client_id) has for `kind` now, recording nothing; counted
    /// as a throttled request when non-zero.
    std::chrono::milliseconds throttled_now(quota_front front, auth::quota_kind kind,
                                            std::string_view principal,
                                            std::string_view client_id);
    /// A quota of `kind` applies to (principal, client_id): only then is a request's io-thread
    /// time measured for request_percentage (gateway/core/busy_time.h).
    bool applies(auth::quota_kind kind, std::string_view principal,
                 std::string_view client_id) const;
    /// Records `busy` io-thread time of one request against (principal, client_id)'s
    /// request_percentage and returns the throttle time it earned (Kafka records a request's
    /// time in percent-seconds: 100 is one thread busy for the whole window).
    std::chrono::milliseconds record_request_time(quota_front front, std::string_view principal,
                                                  std::string_view client_id,
                                                  std::chrono::nanoseconds busy);
    /// What (principal, client_id) may still use of `kind` now, or nullopt when no quota
    /// applies (auth::client_quotas::headroom).
    std::optional<double> headroom(auth::quota_kind kind, std::string_view principal,
                                   std::string_view client_id);

private:
    void count_throttle(quota_front front, auth::quota_kind kind, std::string_view principal,
                        std::string_view client_id, std::chrono::milliseconds ms);
    void render(std::string& out) const;

    using cells = std::array<std::array<std::atomic<std::uint64_t>, auth::quota_kind_count>,
                             quota_front_count>;
    auth::client_quotas& quotas_;
    cells bytes_{};
    cells throttle_ms_{};
    cells throttled_{};
    std::array<std::atomic<std::uint64_t>, quota_front_count> busy_ns_{};
    std::atomic<std::int64_t> last_warn_ms_{0};
    std::atomic<std::uint64_t> unreported_{0};
};

}  // namespace sluice::gateway
