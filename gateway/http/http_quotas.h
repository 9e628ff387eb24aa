// Client quotas on the HTTP front (auth/client_quotas.h): the REST produce routes count their
// request bodies (a streamed REST v3 body once it is read) against the principal's
// producer_byte_rate, REST v2 consumer reads their answers' bytes against its
// consumer_byte_rate, and every request but the WebSocket and SSE streams and the probes
// (/healthz, /readyz, /metrics) its handler's io-thread time against its request_percentage. A principal already over one of these gets
// 429 Too Many Requests with Retry-After (seconds, rounded up) and the REST Proxy's body
// {"error_code":42901,"message":"..."}. The HTTP principal is the quota user; there is no
// client id (the /clients/<default> entity applies). Stateless; called by the router's guard.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "gateway/httpcore/router.h"
#include "gateway/policy/quota_meter.h"

namespace sluice::gateway {

/// 42901: the REST Proxy's "too many requests" error code.
inline constexpr int too_many_requests_code = 42901;

/// The 429 answer for a request throttled for `wait`.
http_response quota_exceeded(std::chrono::milliseconds wait, std::string_view quota);

/// For a request that passed authentication and ACLs on route `pattern`: nullopt lets it
/// through (a buffered produce body has then been counted, and ctx->after set when the end of
/// the handler has more to count), else the 429 to answer. `quotas` may be null (no quotas).
std::optional<http_response> check_http_quota(quota_meter* quotas, http_request_context* ctx,
                                              std::string_view pattern);

/// A stream (WebSocket subscription, SSE) sent `bytes` of records to `principal`: counted
/// against its consumer_byte_rate; over the quota, this waits out the throttle time (a timer
/// on the stream's executor) so that the stream is paced rather than dropped.
boost::asio::awaitable<void> pace_stream(quota_meter* quotas, quota_front front,
                                         std::string principal, double bytes);

/// A WebSocket produce of `bytes` by `principal`: the throttle time when the principal is
/// already over its producer_byte_rate (the produce is refused with 42901), else zero (and the
/// bytes are counted).
std::chrono::milliseconds ws_produce_throttle(quota_meter* quotas, std::string_view principal,
                                              double bytes);

}  // namespace sluice::gateway
