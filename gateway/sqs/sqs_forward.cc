#include "gateway/sqs/sqs_forward.h"

#include <utility>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace sluice::gateway::sqs {
namespace asio = boost::asio;
namespace beast = boost::beast;

asio::awaitable<std::optional<http_response>> forward_http(const std::string& base,
                                                           http_request req,
                                                           std::chrono::milliseconds timeout,
                                                           std::string* error) {
    constexpr std::string_view scheme = "http://";
    if (!base.starts_with(scheme)) {
        *error = "the owner's SQS address " + base + " is not an http:// URL";
        co_return std::nullopt;
    }
    std::string authority = base.substr(scheme.size());
    if (auto slash = authority.find('/'); slash != std::string::npos) {
        authority.resize(slash);
    }
    std::string host = authority;
    std::string port = "80";
    if (auto colon = authority.rfind(':'); colon != std::string::npos &&
                                           authority.find(']', colon) == std::string::npos) {
        host = authority.substr(0, colon);
        port = authority.substr(colon + 1);
    }
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    const auto ex = co_await asio::this_coro::executor;
    boost::system::error_code ec;
    asio::ip::tcp::resolver resolver(ex);
    auto found = co_await resolver.async_resolve(host, port,
                                                 asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        *error = "the owner " + base + " cannot be resolved: " + ec.message();
        co_return std::nullopt;
    }
    beast::tcp_stream stream(ex);
    stream.expires_after(timeout);
    co_await stream.async_connect(found, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        *error = "the owner " + base + " cannot be reached: " + ec.message();
        co_return std::nullopt;
    }
    req.set(forwarded_header, "1");
    req.keep_alive(false);
    req.prepare_payload();
    co_await beast::http::async_write(stream, req, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        *error = "the request could not be sent to the owner " + base + ": " + ec.message();
        co_return std::nullopt;
    }
    beast::flat_buffer buffer;
    http_response res;
    beast::http::response_parser<beast::http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    co_await beast::http::async_read(stream, buffer, parser,
                                     asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        *error = "the owner " + base + " did not answer: " + ec.message();
        co_return std::nullopt;
    }
    res = parser.release();
    res.erase(beast::http::field::connection);
    res.erase(beast::http::field::transfer_encoding);
    res.erase(beast::http::field::keep_alive);
    res.version(req.version());
    res.prepare_payload();
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    co_return res;
}

}  // namespace sluice::gateway::sqs
