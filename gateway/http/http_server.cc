#include "gateway/http/http_server.h"

#include <chrono>
#include <stdexcept>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "gateway/http/group_routes.h"
#include "gateway/kafka/logger.h"

namespace sluice::gateway {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

constexpr std::size_t max_body_bytes = 16 * 1024 * 1024;
constexpr auto request_timeout = std::chrono::seconds(60);

tcp::endpoint make_endpoint(const endpoint& where) {
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(where.host == "localhost" ? "127.0.0.1" : where.host, ec);
    if (ec) {
        throw std::runtime_error("cannot listen on '" + where.host + "': not an IP address");
    }
    return tcp::endpoint(addr, where.port);
}

std::string json_error(unsigned code, const std::string& message) {
    std::string escaped;
    for (char c : message) {
        if (c == '"' || c == '\\') {
            escaped.push_back('\\');
        }
        escaped.push_back(c);
    }
    return "{\"error_code\":" + std::to_string(code) + ",\"message\":\"" + escaped + "\"}";
}

}  // namespace

http_server::http_server(io_pool& pool, services& svc, connection_tracker& tracker,
                         const endpoint& where)
    : pool_(pool),
      svc_(svc),
      tracker_(tracker),
      acceptor_(pool.context(0)),
      requests_(svc.metrics.get_counter("sluice_http_requests_total", "HTTP requests served")) {
    auto ep = make_endpoint(where);
    boost::system::error_code ec;
    acceptor_.open(ep.protocol(), ec);
    if (!ec) {
        acceptor_.set_option(tcp::acceptor::reuse_address(true), ec);
        acceptor_.bind(ep, ec);
    }
    if (!ec) {
        acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    }
    if (ec) {
        throw std::runtime_error("--http: cannot listen on " + where.to_string() + ": " +
                                 ec.message());
    }
}

tcp::endpoint http_server::local_endpoint() const { return acceptor_.local_endpoint(); }

void http_server::start() {
    asio::co_spawn(acceptor_.get_executor(), accept_loop(), asio::detached);
}

void http_server::stop() {
    asio::post(acceptor_.get_executor(), [this] {
        boost::system::error_code ec;
        acceptor_.close(ec);
    });
}

asio::awaitable<void> http_server::accept_loop() {
    for (;;) {
        boost::system::error_code ec;
        tcp::socket socket = co_await acceptor_.async_accept(
            pool_.next(), asio::redirect_error(asio::use_awaitable, ec));
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) {
            co_return;
        }
        if (ec) {
            http_log().warn("accept failed: {}", ec.message());
            continue;
        }
        auto ex = socket.get_executor();
        auto handle = std::make_shared<tcp::socket*>(nullptr);
        // Both shutdown steps close the socket: a request in progress is not finished.
        const std::uint64_t id = tracker_.enter([ex, handle](stop_mode) {
            asio::post(ex, [handle] {
                if (*handle != nullptr) {
                    boost::system::error_code ignored;
                    (*handle)->close(ignored);
                }
            });
        });
        asio::co_spawn(ex, serve(std::move(socket), id, handle),
                       [this, id](std::exception_ptr) { tracker_.leave(id); });
    }
}

asio::awaitable<void> http_server::serve(tcp::socket socket, std::uint64_t id,
                                         std::shared_ptr<tcp::socket*> handle) {
    beast::tcp_stream stream(std::move(socket));
    *handle = &stream.socket();
    beast::flat_buffer buffer;
    for (;;) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(max_body_bytes);
        stream.expires_after(request_timeout);
        boost::system::error_code ec;
        co_await http::async_read(stream, buffer, parser,
                                  asio::redirect_error(asio::use_awaitable, ec));
        if (ec == http::error::end_of_stream || ec == asio::error::eof ||
            ec == beast::error::timeout || ec == asio::error::operation_aborted) {
            break;
        }
        http::response<http::string_body> res;
        if (ec) {
            // Oversized or unparseable request: answer once and close.
            unsigned status = ec == http::error::body_limit ? 413 : 400;
            res.result(status);
            res.set(http::field::content_type, "application/json");
            res.body() = json_error(status, ec.message());
            res.keep_alive(false);
            res.prepare_payload();
            co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
            break;
        }
        auto& req = parser.get();
        requests_.inc();
        http_answer answer = route(std::string(req.method_string()), std::string(req.target()),
                                   req.body());
        res.result(answer.status);
        res.version(req.version());
        res.set(http::field::server, "sluice");
        res.set(http::field::content_type, answer.content_type);
        res.keep_alive(req.keep_alive());
        res.body() = std::move(answer.body);
        res.prepare_payload();
        co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
        if (ec || !res.keep_alive()) {
            break;
        }
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    *handle = nullptr;
    (void)id;
}

http_answer http_server::route(const std::string& method, const std::string& target,
                               const std::string&) {
    std::string path = target.substr(0, target.find('?'));
    if (path == "/healthz") {
        if (method != "GET" && method != "HEAD") {
            return {405, "application/json", json_error(405, "use GET")};
        }
        return {200, "application/json", "{\"status\":\"ok\"}"};
    }
    if (path == "/metrics") {
        if (method != "GET") {
            return {405, "application/json", json_error(405, "use GET")};
        }
        return {200, "text/plain; version=0.0.4", svc_.metrics.render()};
    }
    if (auto answer = group_route(svc_.groups, method, path)) {
        return std::move(*answer);
    }
    return {404, "application/json", json_error(404, "no route for " + method + " " + path)};
}

}  // namespace sluice::gateway
