// The HTTP listener: /healthz, /metrics (Prometheus text), and the routes later fronts add
// (REST Proxy, WebSocket, console). Boost.Beast over the shared io_pool.
//
// Lifecycle: constructed by run_server (binds immediately), start(), stop() closes the acceptor;
// connections stop through the connection_tracker. Each connection is one coroutine on one
// io_context; every read has a body limit and a deadline.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "gateway/server/config.h"
#include "gateway/server/connection_tracker.h"
#include "gateway/server/io_pool.h"
#include "gateway/server/services.h"

namespace sluice::gateway {

/// A complete HTTP answer: status, content type, body.
struct http_answer {
    unsigned status = 200;
    std::string content_type = "application/json";
    std::string body;
};

class http_server {
public:
    http_server(io_pool& pool, services& svc, connection_tracker& tracker, const endpoint& where);

    boost::asio::ip::tcp::endpoint local_endpoint() const;
    void start();
    void stop();

    /// Answers one request (method, target path with query, body). Exposed for tests.
    http_answer route(const std::string& method, const std::string& target,
                      const std::string& body);

private:
    boost::asio::awaitable<void> accept_loop();
    boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket, std::uint64_t id,
                                       std::shared_ptr<boost::asio::ip::tcp::socket*> handle);

    io_pool& pool_;
    services& svc_;
    connection_tracker& tracker_;
    boost::asio::ip::tcp::acceptor acceptor_;
    counter& requests_;
};

}  // namespace sluice::gateway
