#include "gateway/proxy/upstream_stream.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace sluice::gateway::proxy {
namespace asio = boost::asio;
using asio::ip::tcp;

upstream_stream::upstream_stream(const asio::any_io_executor& ex) : socket_(ex) {}

asio::awaitable<bool> upstream_stream::open(std::string host, int port,
                                            std::shared_ptr<auth::tls_client_context> tls,
                                            std::string& why) {
    const std::string where = host + ":" + std::to_string(port);
    boost::system::error_code ec;
    tcp::resolver resolver(socket_.get_executor());
    // g++ 12: no temporary with a destructor inside a co_await expression (it may be
    // destroyed twice); the service name is a named local.
    const std::string service = std::to_string(port);
    const auto found = co_await resolver.async_resolve(
        host, service, asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
        co_await asio::async_connect(socket_, found, asio::redirect_error(asio::use_awaitable, ec));
    }
    if (ec || !socket_.is_open()) {
        // The deadline closing the socket aborts the wait.
        const bool timed_out = !ec || ec == asio::error::operation_aborted;
        why = where + ": " + (timed_out ? std::string("timed out") : ec.message());
        co_return false;
    }
    socket_.set_option(tcp::no_delay(true), ec);
    if (!tls) {
        co_return true;
    }
    context_ = std::move(tls);
    tls_ = std::make_unique<asio::ssl::stream<tcp::socket&>>(socket_, context_->ssl);
    std::string refused;
    if (!auth::prepare_client_connection(*context_, tls_->native_handle(), host, refused)) {
        why = where + ": " + refused;
        co_return false;
    }
    co_await tls_->async_handshake(asio::ssl::stream_base::client,
                                   asio::redirect_error(asio::use_awaitable, ec));
    if (ec || !socket_.is_open()) {
        why = where + ": TLS handshake failed: " +
              (socket_.is_open() ? auth::client_handshake_failure(tls_->native_handle(), ec)
                                 : std::string("timed out"));
        co_return false;
    }
    co_return true;
}

asio::awaitable<void> upstream_stream::read(asio::mutable_buffer b,
                                            boost::system::error_code& ec) {
    if (tls_) {
        co_await asio::async_read(*tls_, b, asio::redirect_error(asio::use_awaitable, ec));
    } else {
        co_await asio::async_read(socket_, b, asio::redirect_error(asio::use_awaitable, ec));
    }
}

asio::awaitable<void> upstream_stream::write(asio::const_buffer b,
                                             boost::system::error_code& ec) {
    if (tls_) {
        co_await asio::async_write(*tls_, b, asio::redirect_error(asio::use_awaitable, ec));
    } else {
        co_await asio::async_write(socket_, b, asio::redirect_error(asio::use_awaitable, ec));
    }
}

void upstream_stream::close() {
    boost::system::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
}

}  // namespace sluice::gateway::proxy
