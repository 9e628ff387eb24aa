// The HTTP listener: /healthz, /metrics (Prometheus text), the group views (/v1/groups), the
// REST Proxy API (v2 and v3), and the routes later fronts add (WebSocket, SSE, console).
// Boost.Beast over the shared io_pool, through the common tcp_listener; requests are answered
// by the router.
//
// Lifecycle: constructed by run_server (binds immediately and registers the built-in
// routes), more routes may be added through routes() before start(); stop() stops accepting
// (connections stop through the connection_tracker). Each connection is an http_connection
// on one io_context; every read has a size limit and a deadline (http_limits). An HTTPS
// listener (--http https://HOST:PORT) gives each new connection its TLS holder's current
// context (see http_connection).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "auth/credential_store.h"
#include "auth/failure_limiter.h"
#include "auth/jwt/jwt.h"
#include "auth/tls/tls_context.h"

#include "backend/api/acls.h"
#include "gateway/httpcore/http_connection.h"
#include "gateway/http/console_users.h"
#include "gateway/http/http_settings.h"
#include "gateway/http/record_producer.h"
#include "gateway/http/shared_acls.h"
#include "gateway/httpcore/router.h"
#include "gateway/core/config.h"
#include "gateway/core/connection_tracker.h"
#include "gateway/core/io_pool.h"
#include "gateway/core/tcp_listener.h"
#include "gateway/policy/chain.h"

#include "backend/api/client.h"
#include "backend/api/groups.h"
#include "backend/api/queues.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"

namespace sluice::gateway {

namespace rest {
struct rest_context;
class consumer_registry;
}
namespace ws {
struct ws_context;
}

class http_authenticator;
class metrics_registry;

/// What the HTTP front (REST Proxy, WebSocket, SSE, console) stands on: the backend's
/// interfaces, the cluster identity it reports, topic auto-creation as the Kafka front does
/// it, the authentication pieces, the policy chain and the metrics registry. Built by
/// run_server; owns nothing, and run_server's objects outlive every connection.
struct http_services {
    metrics_registry& metrics;
    /// The client level (producer, consumers, admin, topology): what the REST, WebSocket and
    /// SSE fronts move onto so that they run the same over a Kafka cluster (upstream mode).
    backend::api::client& client;
    /// The broker level of the native backend; all null in upstream mode (a Kafka cluster
    /// behind the client level), where the routes that need them are not registered.
    backend::api::topics* topics = nullptr;
    backend::api::records* records = nullptr;
    backend::api::groups* groups = nullptr;
    /// The SQS front's queues, behind the queue views (/v1/queues): the native backend's, or
    /// in upstream mode with SQS on the queue service over the cluster; null without them.
    backend::api::queues* queues = nullptr;
    std::string cluster_id;
    std::int32_t node_id = 0;
    bool auto_create_topics = true;    // auto.create.topics.enable
    std::int32_t num_partitions = 1;   // num.partitions, for topics created on first use
    auth::credential_store& users;
    auth::failure_limiter& auth_failures;
    /// The JWT verifier for HTTP Bearer; null when no keys are configured.
    const auth::jwt_verifier* tokens = nullptr;
    /// The policy chain (gateway/policy/chain.h): the ACLs and the client quotas of every
    /// route, WebSocket op and stream; off when none are configured.
    policy_chain chain = {};
    /// Why the gateway is not ready yet beyond its client level (upstream mode: the users,
    /// ACLs, quotas and keys of the cluster not read up to date yet), or nullopt; /readyz
    /// answers 503 with it. Empty: nothing more to wait for.
    std::function<std::optional<std::string>()> not_ready_reason = {};
    /// Upstream mode: where the console's user changes go first (the fleet's shared state,
    /// gateway/http/console_users.h); null in native mode (the users' own file).
    shared_users* shared_user_state = nullptr;
    /// Upstream mode: the ACLs this gateway enforces (GET /v1/console/gateway-acls lists
    /// them; REST v3's ACL routes are the cluster's); null in native mode.
    backend::api::acl_store* gateway_acls = nullptr;
    /// Upstream mode: where the console's changes of those ACLs go (POST and DELETE
    /// /v1/console/gateway-acls; gateway/http/shared_acls.h); null in native mode.
    shared_acls* shared_gateway_acls = nullptr;
};

class http_server {
public:
    /// Binds and listens (throws std::runtime_error naming --http and the address).
    /// `tls`: HTTPS, null for plain HTTP.
    http_server(io_pool& pool, http_services svc, connection_tracker& tracker, const endpoint& where, http_settings settings = {},
                std::shared_ptr<auth::tls_context_holder> tls = nullptr);
    ~http_server();

    boost::asio::ip::tcp::endpoint local_endpoint() const { return listener_.local_endpoint(); }
    /// The route table; add routes before start() only.
    router& routes() { return router_; }

    void start();
    /// What /readyz answers: 200 once the server says every listener is open (the storage has
    /// been recovered before any listener exists) and the client level can reach its cluster
    /// (client().check(): always in native mode), 503 with the reason before that and from the
    /// start of the shutdown, so that a load balancer stops sending new work first.
    void set_ready(bool ready) { ready_->store(ready, std::memory_order_relaxed); }
    /// Stops accepting and ends the background work (REST consumer members); pending() tells
    /// when that has finished.
    void stop();
    std::size_t pending() const;

private:
    /// The REST Proxy (v2, v3), WebSocket and SSE routes with what they share.
    void add_rest_and_stream_routes(io_pool& pool);
    /// The connection_handler: an http_connection per socket.
    connection_session open(boost::asio::ip::tcp::socket socket, std::uint64_t id);

    http_services svc_;
    http_settings settings_;
    router router_;
    std::unique_ptr<record_producer> producer_;
    std::unique_ptr<rest::rest_context> rest_;
    std::unique_ptr<rest::consumer_registry> consumers_;
    std::unique_ptr<ws::ws_context> ws_;
    /// http.authentication: the router's guard.
    std::unique_ptr<http_authenticator> auth_;
    counter& requests_;
    request_timing timing_;
    std::shared_ptr<auth::tls_context_holder> tls_;  // null: plain HTTP
    std::shared_ptr<std::atomic<bool>> ready_ = std::make_shared<std::atomic<bool>>(false);
    tcp_listener listener_;
};

}  // namespace sluice::gateway
