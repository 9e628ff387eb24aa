#include "gateway/http/http_server.h"

#include <memory>

#include "gateway/http/browser_rules.h"
#include "gateway/http/group_routes.h"
#include "gateway/http/queue_routes.h"
#include "gateway/http/http_auth.h"
#include "gateway/http/http_quotas.h"
#include "gateway/http/json.h"
#include "gateway/http/rest/consumer_registry.h"
#include "gateway/http/rest/rest_routes.h"
#include "gateway/http/sse_stream.h"
#include "gateway/http/ui_routes.h"
#include "gateway/httpcore/logger.h"
#include "gateway/policy/front_acls.h"
#include "gateway/http/ws/ws_session.h"

namespace sluice::gateway {
namespace asio = boost::asio;
using asio::ip::tcp;
using boost::beast::http::verb;

namespace {

asio::awaitable<handler_result> healthz(http_request_context) {
    co_return make_response({200, "application/json", "{\"status\":\"ok\"}"});
}

/// 200 once every listener is open and the client level reaches its cluster; else 503 with
/// the reason the client level gives (upstream mode: "upstream 127.0.0.1:9092: connection
/// refused", say).
asio::awaitable<handler_result> readyz(
    std::shared_ptr<std::atomic<bool>> ready, const backend::api::client* client,
    const std::function<std::optional<std::string>()>* waiting_for, http_request_context) {
    if (!ready->load(std::memory_order_relaxed)) {
        co_return make_response({503, "application/json", "{\"status\":\"not ready\"}"});
    }
    const backend::api::client::health health = client->check();
    std::optional<std::string> reason;
    if (!health.ready) {
        reason = health.reason;
    } else if (*waiting_for) {
        reason = (*waiting_for)();
    }
    if (reason) {
        json::writer w;
        w.start_object();
        w.field("status", "not ready");
        w.field("reason", *reason);
        w.end_object();
        co_return make_response({503, "application/json", w.str()});
    }
    co_return make_response({200, "application/json", "{\"status\":\"ready\"}"});
}

/// The policy half of the guard, after authentication: the chain decides on the route's facts
/// (its ACL checks, all or nothing; its quotas). Nothing is built when the chain neither
/// authorizes nor meters.
std::optional<http_response> admit_by_policy(const policy_chain& chain, http_request_context* ctx,
                                             std::string_view pattern) {
    if (!chain.authorizing() && !chain.metering()) {
        return std::nullopt;
    }
    acl_checks checks;
    std::vector<access> accesses;
    std::string action;
    if (chain.authorizing()) {
        checks = http_route_checks(ctx->req.method(), pattern, ctx->params, ctx->query);
        accesses = accesses_of(checks);
        action = std::string(ctx->req.method_string()) + " " + std::string(pattern);
    }
    request_facts facts{.who = http_requester(*ctx, http_route_front(pattern)),
                        .action = action,
                        .accesses = accesses,
                        .all_or_nothing = true};
    http_quota_facts(ctx->req.method(), pattern, facts);
    const decision d = chain.decide(facts);
    if (d.first_denied != nullptr) {
        return rest::acl_denied(*d.first_denied,
                                pattern.starts_with("/topics") || pattern.starts_with("/consumers"));
    }
    if (d.delay.count() > 0) {
        return quota_exceeded(d.delay, auth::to_string(*d.throttled_by));
    }
    meter_http_request(chain, ctx, facts, d);
    return std::nullopt;
}

/// The browser rules (browser_rules.h: the request's Origin, a JSON body on state-changing /v1
/// routes), then authentication (http.authentication), then the policy chain: the ACL checks
/// the route's path decides (http_route_checks), 403 with the REST Proxy's 40301 when one is
/// denied; then the client quotas (http_quota_facts), 429 with 42901 when the principal is
/// over its quota.
asio::awaitable<std::optional<http_response>> guard(const cors_policy* origins,
                                                    const http_authenticator* auth,
                                                    policy_chain chain,
                                                    http_request_context* ctx,
                                                    std::string pattern) {
    if (auto refusal = check_browser_rules(*origins, *ctx, pattern)) {
        co_return refusal;
    }
    auto refusal = co_await auth->check(ctx, pattern);
    if (refusal) {
        co_return refusal;
    }
    co_return admit_by_policy(chain, ctx, pattern);
}

asio::awaitable<handler_result> metrics_page(metrics_registry* metrics, http_request_context) {
    co_return make_response({200, "text/plain; version=0.0.4", metrics->render()});
}

}  // namespace

http_server::http_server(io_pool& pool, http_services svc, connection_tracker& tracker,
                         const endpoint& where,
                         http_settings settings,
                         std::shared_ptr<auth::tls_context_holder> tls)
    : svc_(std::move(svc)),
      settings_(std::move(settings)),
      requests_(svc_.metrics.get_counter("sluice_http_requests_total", "HTTP requests served")),
      timing_(svc_.metrics, "http"),
      tls_(std::move(tls)),
      listener_(pool, tracker, svc_.metrics, listener_options{"http", "--http", ""}, where,
                [this](tcp::socket socket, std::uint64_t id) {
                    return open(std::move(socket), id);
                }) {
    router_.add(verb::get, "/healthz", healthz);
    router_.add(verb::get, "/readyz",
                [ready = ready_, client = &svc_.client,
                 waiting_for = &svc_.not_ready_reason](http_request_context ctx) {
                    return readyz(ready, client, waiting_for, std::move(ctx));
                });
    router_.add(verb::get, "/metrics", [m = &svc_.metrics](http_request_context ctx) {
        return metrics_page(m, std::move(ctx));
    });
    // The group views stand on the client level; the queue views read the SQS front's queues
    // (native, or over the cluster in upstream mode with SQS on).
    add_group_routes(router_, svc_.client.admin(), svc_.chain);
    if (svc_.queues != nullptr) {
        add_queue_routes(router_, *svc_.queues, svc_.chain);
    }
    // The REST, WebSocket and SSE fronts stand on the client level only.
    add_rest_and_stream_routes(pool);
    add_ui_routes(router_);
    // After the REST Proxy's GET /, which the console's hands every non-browser request to.
    add_console_route(router_);
    add_console_api_routes(router_, console_services{.admin = svc_.client.admin(),
                                                     .queues = svc_.queues,
                                                     .chain = svc_.chain,
                                                     .cluster_id = svc_.cluster_id,
                                                     .node_id = svc_.node_id,
                                                     .upstream = svc_.topics == nullptr});
    add_console_user_routes(router_, console_user_services{svc_.users, svc_.shared_user_state});
    auth_ = std::make_unique<http_authenticator>(settings_.authentication, svc_.users, svc_.tokens,
                                                 svc_.auth_failures, svc_.metrics);
    add_console_session_routes(router_, *auth_);
    router_.set_guard([o = &settings_.cors, a = auth_.get(), chain = svc_.chain](
                          http_request_context* ctx, std::string pattern) {
        return guard(o, a, chain, ctx, std::move(pattern));
    });
}

http_server::~http_server() = default;

void http_server::add_rest_and_stream_routes(io_pool& pool) {
    producer_ = std::make_unique<record_producer>(
        svc_.client, settings_.producer_acks,
        topic_auto_creation{svc_.auto_create_topics, svc_.num_partitions});
    rest_ = std::make_unique<rest::rest_context>(rest::rest_context{
        settings_, svc_.cluster_id, svc_.node_id, *producer_, svc_.chain, &svc_.client,
        svc_.gateway_acls, svc_.shared_gateway_acls});
    // Upstream mode (no broker level here): a fleet of gateways may share the instances.
    consumers_ = std::make_unique<rest::consumer_registry>(
        *rest_, [&pool] { return pool.next().get_executor(); }, svc_.topics == nullptr);
    if (settings_.api_v2_enable) {
        rest::add_v2_produce_routes(router_, *rest_);
        rest::add_v2_metadata_routes(router_, *rest_);
        rest::add_v2_consumer_routes(router_, *rest_, *consumers_);
    }
    if (settings_.api_v3_enable) {
        rest::add_v3_routes(router_, *rest_);
    }
    const std::string dropped_help =
        "WebSocket clients dropped: one that did not drain a frame within "
        "websocket.write.timeout.ms (write_timeout), or was silent, pongs included, for "
        "websocket.idle.timeout.ms (idle_timeout)";
    ws_ = std::make_unique<ws::ws_context>(ws::ws_context{
        *rest_, [&pool] { return pool.next().get_executor(); },
        &svc_.metrics.get_counter("sluice_websocket_dropped_total", dropped_help,
                                 {{"reason", "write_timeout"}}),
        &svc_.metrics.get_counter("sluice_websocket_dropped_total", dropped_help,
                                 {{"reason", "idle_timeout"}})});
    ws::add_ws_route(router_, *ws_);
    add_sse_routes(router_, *rest_, [&pool] { return pool.next().get_executor(); });
}

void http_server::start() {
    if (consumers_) {
        consumers_->start();
    }
    listener_.start();
}

void http_server::stop() {
    listener_.stop();
    if (consumers_) {
        consumers_->stop();
    }
}

std::size_t http_server::pending() const { return consumers_ ? consumers_->pending() : 0; }

connection_session http_server::open(tcp::socket socket, std::uint64_t id) {
    auto conn = std::make_shared<http_connection>(std::move(socket), id, router_, requests_,
                                                  settings_.limits, connection_error_page{},
                                                  &settings_.cors, &timing_,
                                                  tls_ ? tls_->current() : nullptr);
    return connection_session{conn->run(), [conn](stop_mode mode) { conn->stop(mode); }};
}

}  // namespace sluice::gateway
