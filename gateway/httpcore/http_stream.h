// The byte stream of one HTTP connection: plain TCP (beast::tcp_stream) or TLS over it
// (asio::ssl::stream<beast::tcp_stream&>). Handlers that take the connection over (WebSocket,
// SSE, the v3 streamed produce) see only this type; each read or write picks its transport with
// one branch, no virtual call. The tcp_stream's deadlines (expires_after) bound the TLS
// stream's reads and writes too, since they go through it.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>

#include <boost/asio/async_result.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <boost/beast/websocket/teardown.hpp>

namespace sluice::gateway {

/// Lifecycle: owned by the connection; start_tls() (before the first read) makes it a TLS
/// stream. Concurrency: one read and one write at a time, on the socket's executor.
class http_stream {
public:
    using executor_type = boost::beast::tcp_stream::executor_type;
    using tls_stream = boost::asio::ssl::stream<boost::beast::tcp_stream&>;

    explicit http_stream(boost::asio::ip::tcp::socket socket) : tcp_(std::move(socket)) {}

    /// From here on bytes are TLS records, in the context `ctx` (which must outlive this).
    void start_tls(boost::asio::ssl::context& ctx) {
        tls_ = std::make_unique<tls_stream>(tcp_, ctx);
    }
    /// Null for plain TCP.
    tls_stream* tls() { return tls_.get(); }

    executor_type get_executor() { return tcp_.get_executor(); }
    boost::beast::tcp_stream& tcp() { return tcp_; }
    boost::asio::ip::tcp::socket& socket() { return tcp_.socket(); }
    void expires_after(std::chrono::steady_clock::duration d) { tcp_.expires_after(d); }
    void expires_never() { tcp_.expires_never(); }
    void cancel() { tcp_.cancel(); }

    template <class MutableBuffers, class Token>
    auto async_read_some(const MutableBuffers& buffers, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
            [this](auto handler, const MutableBuffers& b) {
                if (tls_) {
                    tls_->async_read_some(b, std::move(handler));
                } else {
                    tcp_.async_read_some(b, std::move(handler));
                }
            },
            token, buffers);
    }

    template <class ConstBuffers, class Token>
    auto async_write_some(const ConstBuffers& buffers, Token&& token) {
        return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
            [this](auto handler, const ConstBuffers& b) {
                if (tls_) {
                    tls_->async_write_some(b, std::move(handler));
                } else {
                    tcp_.async_write_some(b, std::move(handler));
                }
            },
            token, buffers);
    }

    /// For websocket::stream<http_stream&>: closing a WebSocket tears the transport down (a TLS
    /// close_notify first under TLS).
    friend void teardown(boost::beast::role_type role, http_stream& s,
                         boost::system::error_code& ec) {
        if (s.tls_) {
            boost::beast::teardown(role, *s.tls_, ec);
        } else {
            boost::beast::websocket::teardown(role, s.tcp_.socket(), ec);
        }
    }
    template <class Handler>
    friend void async_teardown(boost::beast::role_type role, http_stream& s, Handler&& handler) {
        if (s.tls_) {
            boost::beast::async_teardown(role, *s.tls_, std::forward<Handler>(handler));
        } else {
            boost::beast::websocket::async_teardown(role, s.tcp_.socket(),
                                                   std::forward<Handler>(handler));
        }
    }
    /// For beast::close_socket (the WebSocket's timeouts).
    friend void beast_close_socket(http_stream& s) {
        boost::system::error_code ec;
        s.tcp_.socket().close(ec);
    }

private:
    boost::beast::tcp_stream tcp_;
    std::unique_ptr<tls_stream> tls_;
};

}  // namespace sluice::gateway
