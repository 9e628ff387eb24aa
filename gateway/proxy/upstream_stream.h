// One connection of the Kafka proxy to an upstream broker (owned by gateway/proxy): TCP, and
// TLS over it when upstream.security.protocol is SSL or SASL_SSL (auth/tls's client context:
// SNI, the broker's certificate and host name checked). The proxy's per-client connections
// and the topology's refresh connections both open theirs with open(); what follows (the
// SASL login, requests and responses) reads and writes through it the same way either way.
//
// Lifecycle: built on an executor, open() once, then read()/write() until close() (from the
// same executor; a deadline bounding open() closes socket()). Concurrency: not thread-safe;
// one read and one write may be outstanding at a time (as asio::ssl::stream allows).
#pragma once

#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>

#include "auth/tls/tls_client_context.h"

namespace sluice::gateway::proxy {

class upstream_stream {
public:
    explicit upstream_stream(const boost::asio::any_io_executor& ex);

    /// Resolves and connects to `host`:`port`; with `tls` the client handshake follows (SNI
    /// and the name checked are `host`). False with `why` set (one line for the log: the
    /// address and the reason, e.g. the certificate verification's) when any step fails.
    /// The caller bounds it: a deadline closing socket() ends it with "timed out".
    boost::asio::awaitable<bool> open(std::string host, int port,
                                      std::shared_ptr<auth::tls_client_context> tls,
                                      std::string& why);
    /// Reads exactly the size of `b`.
    boost::asio::awaitable<void> read(boost::asio::mutable_buffer b,
                                      boost::system::error_code& ec);
    /// Writes every byte of `b`.
    boost::asio::awaitable<void> write(boost::asio::const_buffer b,
                                       boost::system::error_code& ec);
    /// Closes the socket (an outstanding read or write ends with an error).
    void close();
    bool is_open() const { return socket_.is_open(); }
    boost::asio::ip::tcp::socket& socket() { return socket_; }

private:
    boost::asio::ip::tcp::socket socket_;
    std::shared_ptr<auth::tls_client_context> context_;  // kept alive for tls_
    std::unique_ptr<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls_;
};

}  // namespace sluice::gateway::proxy
