// The SQS listener (owned by gateway/sqs): HTTP/1.1 on its own port (--sqs, default 9324),
// through the common tcp_listener, http_connection and router; every path and both POST (the
// JSON protocol, the Query protocol's form bodies) and GET (Query parameters in the URL) go to
// the SQS front. With --sqs https://HOST:PORT the connections are HTTPS (see http_connection),
// each on its TLS holder's context of the moment it was accepted.
//
// The router's guard is the front's admit(), run on each request's header before its body is
// read: a browser Origin that is not allowed, and with sqs.authentication=sigv4 what the
// header already refuses (no signature, a malformed one, an unknown access key, a date out of
// range), is answered without reading the body. The signature covers the body's hash, so it is
// verified by the front once the body is in (read within the shared body budget,
// http_limits::bodies).
//
// Lifecycle: constructed by run_server (binds immediately); start() accepts; stop() stops
// accepting (connections stop through the connection_tracker; parked long polls are answered
// by the backend's stop()). Concurrency: each connection on its own io_context.
#pragma once

#include <cstdint>
#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include "auth/tls/tls_context.h"
#include "backend/api/queues.h"
#include "gateway/httpcore/http_connection.h"
#include "gateway/httpcore/router.h"
#include "gateway/core/config.h"
#include "gateway/core/connection_tracker.h"
#include "gateway/core/io_pool.h"
#include "gateway/core/metrics.h"
#include "gateway/core/tcp_listener.h"
#include "gateway/sqs/sqs_front.h"

namespace sluice::gateway::sqs {

class sqs_server {
public:
    /// Binds and listens (throws std::runtime_error naming --sqs and the address).
    sqs_server(io_pool& pool, connection_tracker& tracker, metrics_registry& metrics,
               backend::api::queues& queues, sqs_settings settings, const endpoint& where,
               http_limits limits = {}, sqs_auth_config auth = {},
               std::shared_ptr<auth::tls_context_holder> tls = nullptr);

    boost::asio::ip::tcp::endpoint local_endpoint() const { return listener_.local_endpoint(); }
    void start() { listener_.start(); }
    /// See sqs_front::set_forwarder (before start()).
    void set_forwarder(sqs_forwarder* f) { front_.set_forwarder(f); }
    void stop() { listener_.stop(); }

private:
    connection_session open(boost::asio::ip::tcp::socket socket, std::uint64_t id);

    sqs_front front_;
    http_limits limits_;
    router router_;
    counter& requests_;
    request_timing timing_;
    std::shared_ptr<auth::tls_context_holder> tls_;  // null: plain HTTP
    tcp_listener listener_;
};

/// Appends every queue's figures in the Prometheus text format: messages available, in flight
/// and delayed, the oldest message's age, and each dead-letter queue's depth by source queue.
void render_queue_metrics(const backend::api::queues& queues, std::string& out);

}  // namespace sluice::gateway::sqs
