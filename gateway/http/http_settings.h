// The settings of the HTTP front (owned by gateway/http): request limits, allowed origins and
// CORS, the advertised base URL, REST Proxy consumer and producer settings, WebSocket and SSE
// stream limits. Names follow the Confluent REST Proxy (KafkaRestConfig) where it has one;
// their table (http_setting_table) is docs/configuration.md's. Read once at start-up by
// read_http_settings.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "backend/api/records.h"
#include "backend/api/settings.h"
#include "gateway/core/config.h"
#include "gateway/httpcore/cors.h"
#include "gateway/httpcore/http_connection.h"

namespace sluice::gateway {

/// WebSocket and SSE connections.
struct stream_settings {
    std::size_t websocket_max_message_bytes = 1024 * 1024;  // websocket.max.message.bytes
    /// Outgoing bytes queued per connection before reading stops (websocket.queue.max.bytes,
    /// sse.queue.max.bytes).
    std::size_t websocket_queue_max_bytes = 1024 * 1024;
    std::size_t sse_queue_max_bytes = 1024 * 1024;
    /// A frame or chunk not drained by the client in this time drops it.
    std::chrono::milliseconds websocket_write_timeout{30000};  // websocket.write.timeout.ms
    std::chrono::milliseconds sse_write_timeout{30000};        // sse.write.timeout.ms
    /// A WebSocket peer that sends nothing (not even a pong) for this long is dropped; the
    /// server pings it when it has been silent for half of it.
    std::chrono::milliseconds websocket_idle_timeout{60000};   // websocket.idle.timeout.ms
    /// Comment lines keep idle SSE streams alive (and find dead clients).
    std::chrono::milliseconds sse_keepalive_interval{15000};   // sse.keepalive.interval.ms
    std::chrono::milliseconds sse_retry{1000};                 // sse.retry.ms
    /// How long one read of a stream waits in the backend for new records.
    std::chrono::milliseconds fetch_max_wait{500};
};

/// http.authentication: which credentials the HTTP front asks for. Neither: every caller is
/// User:ANONYMOUS (the default).
struct http_auth_mode {
    bool basic = false;   // Authorization: Basic, checked against the SASL users (PLAIN)
    bool bearer = false;  // Authorization: Bearer, a JWT checked like OAUTHBEARER's
    bool any() const { return basic || bearer; }
};

struct http_settings {
    http_limits limits{.max_body_bytes = 64 * 1024 * 1024};  // http.request.max.bytes
    /// http.allowed.origins (with access.control.allow.origin), the advertised URL's origin,
    /// access.control.allow.methods and access.control.allow.headers.
    cors_policy cors;
    /// http.advertised.url: the base of base_uri and v3 links ("https://lb.example.com/kafka");
    /// empty: the request's Host (or X-Forwarded-Host/-Proto) header.
    std::string advertised_url;
    bool api_v2_enable = true;  // api.v2.enable
    bool api_v3_enable = true;  // api.v3.enable
    std::int32_t produce_batch_max_entries = 10;  // api.v3.produce.batch.maximum.entries
    backend::api::acks producer_acks = backend::api::acks::all;  // producer.acks

    // REST Proxy consumer instances (KafkaRestConfig names).
    std::chrono::milliseconds consumer_instance_timeout{300000};  // consumer.instance.timeout.ms
    std::chrono::milliseconds consumer_request_timeout{1000};     // consumer.request.timeout.ms
    std::int64_t consumer_request_max_bytes = 64 * 1024 * 1024;   // consumer.request.max.bytes
    std::int32_t fetch_min_bytes = -1;                            // fetch.min.bytes
    /// The session timeout of the group members sluice runs for REST consumers, WebSocket and
    /// SSE subscriptions (consumer.session.timeout.ms); they heartbeat every third of it.
    std::int32_t member_session_timeout_ms = 30000;

    stream_settings streams;
    http_auth_mode authentication;  // http.authentication

    /// Request bodies held across every connection of the HTTP and SQS listeners
    /// (http.request.body.budget.bytes), and how long a request waits for room before it is
    /// answered 503 (http.request.body.budget.wait.ms): see body_budget.h.
    std::int64_t body_budget_bytes = 256 * 1024 * 1024;
    std::chrono::milliseconds body_budget_wait{10000};
};

/// The HTTP front's settings, in the doc's order.
const backend::api::setting_table& http_setting_table();

/// http.allowed.origins and access.control.allow.origin as one normalized list (cors.h);
/// throws config_error for an entry that is not an origin. The SQS front reads it too.
std::vector<std::string> read_allowed_origins(const config& cfg);

/// Reads (and checks) every HTTP setting; throws config_error for a bad value.
http_settings read_http_settings(const config& cfg);

}  // namespace sluice::gateway
