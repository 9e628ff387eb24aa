#include "gateway/http/http_server.h"

#include <memory>

#include "gateway/http/group_routes.h"
#include "gateway/http/ui_routes.h"

namespace sluice::gateway {
namespace asio = boost::asio;
using asio::ip::tcp;
using boost::beast::http::verb;

namespace {

asio::awaitable<handler_result> healthz(http_request_context) {
    co_return make_response({200, "application/json", "{\"status\":\"ok\"}"});
}

asio::awaitable<handler_result> metrics_page(metrics_registry* metrics, http_request_context) {
    co_return make_response({200, "text/plain; version=0.0.4", metrics->render()});
}

}  // namespace

http_server::http_server(io_pool& pool, services& svc, connection_tracker& tracker,
                         const endpoint& where, http_limits limits)
    : svc_(svc),
      limits_(limits),
      requests_(svc.metrics.get_counter("sluice_http_requests_total", "HTTP requests served")),
      listener_(pool, tracker, svc.metrics, listener_options{"http", "--http", ""}, where,
                [this](tcp::socket socket, std::uint64_t id) {
                    return open(std::move(socket), id);
                }) {
    router_.add(verb::get, "/healthz", healthz);
    router_.add(verb::get, "/metrics", [m = &svc.metrics](http_request_context ctx) {
        return metrics_page(m, std::move(ctx));
    });
    add_group_routes(router_, svc.groups);
    add_ui_routes(router_);
}

connection_session http_server::open(tcp::socket socket, std::uint64_t id) {
    auto conn = std::make_shared<http_connection>(std::move(socket), id, router_, requests_,
                                                  limits_);
    return connection_session{conn->run(), [conn](stop_mode mode) { conn->stop(mode); }};
}

}  // namespace sluice::gateway
