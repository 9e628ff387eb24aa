// Client quotas on the HTTP front (auth/client_quotas.h): the REST produce routes count their
// request bodies (a streamed REST v3 body once it is read) against the principal's
// producer_byte_rate, REST v2 consumer reads their answers' bytes against its
// consumer_byte_rate, and every request but the WebSocket and SSE streams and the probes
// (/healthz, /readyz, /metrics) its handler's io-thread time against its request_percentage. A principal already over one of these gets
// 429 Too Many Requests with Retry-After (seconds, rounded up) and the REST Proxy's body
// {"error_code":42901,"message":"..."}. The HTTP principal is the quota user; there is no
// client id (the /clients/<default> entity applies). Stateless; the quotas are reached through
// the policy chain (gateway/policy/chain.h), whose throttle step the router's guard runs.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

#include "gateway/httpcore/router.h"
#include "gateway/policy/chain.h"

namespace sluice::gateway {

/// 42901: the REST Proxy's "too many requests" error code.
inline constexpr int too_many_requests_code = 42901;

/// The 429 answer for a request throttled for `wait`.
http_response quota_exceeded(std::chrono::milliseconds wait, std::string_view quota);

/// The throttle facts of a request on route `pattern` (what the chain's throttle step checks):
/// the byte-rate quota of a produce or a REST v2 consumer read, and whether its io-thread time
/// counts against request_percentage (not for the streams and the probes). No bytes: the body
/// is read after the guard, the answer written after the handler.
void http_quota_facts(boost::beast::http::verb method, std::string_view pattern,
                      request_facts& facts);

/// For a request the chain let through (`d`, decided on `facts`): sets ctx->after (and
/// ctx->meter_busy_time) so that what only the handler's end knows is recorded through the
/// chain: its io-thread time, the bytes of a produce body (buffered, or streamed as it
/// arrives for a REST v3 produce), the bytes a REST v2 consumer read answered.
void meter_http_request(const policy_chain& chain, http_request_context* ctx,
                        const request_facts& facts, const decision& d);

/// A stream (WebSocket subscription, SSE) of `front` sent `bytes` of records to `principal`:
/// counted through the chain against its consumer_byte_rate; over the quota, this waits out
/// the throttle time (a timer on the stream's executor) so that the stream is paced rather
/// than dropped.
boost::asio::awaitable<void> pace_stream(policy_chain chain, policy_front front,
                                         std::string principal, double bytes);

/// A WebSocket produce of `bytes` by `principal`: the throttle time when the principal is
/// already over its producer_byte_rate (the produce is refused with 42901), else zero (and the
/// bytes are counted). Through the chain's throttle step.
std::chrono::milliseconds ws_produce_throttle(const policy_chain& chain,
                                              std::string_view principal, double bytes);

}  // namespace sluice::gateway
