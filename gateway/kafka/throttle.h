// Client quotas on the Kafka front. The quotas themselves are the policy chain's throttle step
// (gateway/policy/chain.h: record, throttled_now, headroom, record_request_time); what is
// Kafka's own is here: the throttle time in the response's throttle_time_ms, and muting the
// connection for it (request_context::throttle), with the response itself delayed for
// versions older than KIP-219.
#pragma once

#include <cstdint>
#include <optional>

#include "gateway/kafka/request_context.h"

#include "auth/client_quotas.h"

namespace sluice::gateway {

/// Records `amount` of `kind` for the request's principal and client id. Over the quota, the
/// connection is throttled (muted; for versions below `kip219_version` the response is also
/// delayed) and the result is the throttle_time_ms to answer; 0 within the quota or without.
std::int32_t record_quota(request_context& ctx, auth::quota_kind kind, double amount,
                          std::int16_t kip219_version);

/// The throttle time the request's principal already has for `kind` (it is over its quota
/// before this request), throttling the connection as record_quota does; 0 when it is not.
std::int32_t throttled_already(request_context& ctx, auth::quota_kind kind,
                               std::int16_t kip219_version);

/// request_percentage: records the io-thread time the request used so far (when it is
/// metered, request_context::busy) and throttles the connection when that puts its principal
/// over the quota; returns the throttle_time_ms to answer, 0 within the quota or without one.
std::int32_t record_request_time(request_context& ctx);

/// Whether a request_percentage quota applies to the request's principal and client id: the
/// dispatcher then runs the handler on a metered executor (request_context::meter_with).
bool meters_request_time(const request_context& ctx);

/// What the request's principal may still use of `kind` now, or nullopt (no quota).
std::optional<double> quota_headroom(request_context& ctx, auth::quota_kind kind);

}  // namespace sluice::gateway
