// The start of every TLS connection of every listener (Kafka SSL and SASL_SSL, HTTPS, SQS over
// HTTPS): the server side of the handshake with a time bound, and the principal a client
// certificate maps to (ssl.principal.mapping.rules).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/stream_base.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/logger.h>

#include "auth/tls/tls_context.h"
#include "gateway/policy/audit.h"

namespace sluice::gateway {

/// How long a client may take to complete the TLS handshake.
inline constexpr std::chrono::seconds tls_handshake_timeout{10};

/// Runs the server side of the handshake of `tls` (an asio::ssl::stream over `socket`). A
/// client that sends nothing, or too little, is cut when `bound` passes: `socket` is closed.
/// `owner` keeps the socket alive for the timer's handler, which may run after this returns.
/// False (logged on `log` as "<who>: ...") when the handshake failed or timed out; a refused
/// client certificate is also an authentication failure in the audit log, from `source`.
template <class TlsStream>
boost::asio::awaitable<bool> bounded_tls_handshake(TlsStream& tls,
                                                   boost::asio::ip::tcp::socket& socket,
                                                   std::shared_ptr<void> owner,
                                                   spdlog::logger& log, const std::string& who,
                                                   const audit_source& source,
                                                   std::chrono::seconds bound =
                                                       tls_handshake_timeout) {
    namespace asio = boost::asio;
    asio::steady_timer deadline(socket.get_executor(), bound);
    // Shared with the timer's handler, which may run after this coroutine moved on.
    auto timed_out = std::make_shared<bool>(false);
    auto finished = std::make_shared<bool>(false);
    deadline.async_wait([owner, &socket, timed_out, finished](boost::system::error_code ec) {
        if (!ec && !*finished) {
            *timed_out = true;
            boost::system::error_code ignored;
            socket.close(ignored);
        }
    });
    boost::system::error_code ec;
    co_await tls.async_handshake(asio::ssl::stream_base::server,
                                 asio::redirect_error(asio::use_awaitable, ec));
    *finished = true;
    deadline.cancel();
    if (*timed_out) {
        log.info("{}: TLS handshake not done within {} s; closing", who, bound.count());
        co_return false;
    }
    if (ec) {
        log.info("{}: TLS handshake failed: {}", who, ec.message());
        // A refused client certificate is a failed authentication; other handshake failures
        // (a client speaking plaintext, a scanner) are not.
        if (ec.message().find("certificate") != std::string::npos) {
            audit_authentication_failed(source, "mTLS", "", ec.message());
        }
        co_return false;
    }
    co_return true;
}

/// The principal of the client certificate `ssl` presented in a completed handshake:
/// "User:<mapped name>", "User:ANONYMOUS" when it sent none (as Kafka has it), or nullopt
/// when no ssl.principal.mapping.rules rule matches its subject (logged as "<who>: ...";
/// the connection is then refused). Successes are logged too.
/// That refusal is an authentication failure in the audit log, from `source`.
std::optional<std::string> tls_client_principal(const auth::tls_server_context& ctx, SSL* ssl,
                                                const std::string& who,
                                                const audit_source& source);

}  // namespace sluice::gateway
