// One Kafka client connection: reads size-prefixed request frames, hands each to the
// dispatcher, and writes the responses back in request order.
//
//   socket --read_loop--> frame --co_spawn--> dispatcher.dispatch --> slot (ready)
//                                                                        |
//   socket <--write_loop-- responses, in the order the requests arrived <-+
//
// Requests are pipelined: the read loop keeps reading while earlier requests are in flight (up
// to max_in_flight), each request runs as its own coroutine, and the write loop sends the
// responses strictly in arrival order. Handlers start in arrival order, so the part of a
// handler before its first suspension (e.g. a produce's append) also runs in arrival order.
//
// Across all connections, svc.kafka_budget (queued.max.request.bytes, queued.max.requests)
// bounds what is read but not yet answered: the read loop reserves a frame's bytes after its size
// prefix and before allocating it, and waits there (not reading) while the bound is reached.
// The reservation lives in the request's slot, so it is given back once the response has been
// written or the request dropped.
//
// A response whose quota throttled it (dispatch_result::throttle) mutes the connection: the read
// loop reads nothing until the throttle time is over; for requests older than KIP-219 the
// response itself is also held back that long (a timer, never a blocking sleep).
//
// On SSL and SASL_SSL listeners the connection first runs the TLS handshake (bounded by
// tls_handshake_timeout), then the same framing; SASL_SSL then logs in as SASL_PLAINTEXT does.
// With TLS there is no sendfile: a stored batch is pread once into the TLS write. On SSL, a
// client certificate's subject, mapped by ssl.principal.mapping.rules, is the principal. The
// connection keeps the TLS context it was accepted with (a reload changes new connections).
//
// Lifecycle: created by the listener after accept, run() until the peer hangs up, the
// connection idles past connections.max.idle.ms, a protocol error, stop() or cut().
// Concurrency: everything runs on the io_context the socket belongs to (one thread), so no
// member needs a lock; stop() may be called from any thread (it posts).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>

#include "auth/tls/tls_context.h"

#include "gateway/kafka/dispatcher.h"
#include "gateway/kafka/request_context.h"
#include "gateway/core/request_budget.h"
#include "gateway/policy/tls_handshake.h"

namespace sluice::gateway {

class kafka_connection : public std::enable_shared_from_this<kafka_connection> {
public:
    /// `tls` is the context of an SSL or SASL_SSL listener, null for the plaintext ones.
    kafka_connection(boost::asio::ip::tcp::socket socket, services& svc, dispatcher& disp,
                     std::uint64_t id, security_protocol security,
                     std::shared_ptr<auth::tls_server_context> tls = nullptr);

    /// Serves the connection until it ends. Never throws.
    boost::asio::awaitable<void> run();

    /// Graceful (from any thread): stops reading; the responses of the requests already read
    /// are sent, then the socket closes and run() completes.
    void stop();
    /// Terminal (from any thread): closes the socket now; responses still pending are lost.
    void cut();

    std::uint64_t id() const { return info_.id; }

private:
    struct slot {
        bool ready = false;
        dispatch_result result;
        request_budget::reservation reserved;  // given back when the slot is dropped
    };

    boost::asio::awaitable<void> read_loop();
    boost::asio::awaitable<void> write_loop();
    boost::asio::awaitable<void> idle_watchdog();
    boost::asio::awaitable<void> handle(std::shared_ptr<protocol::byte_buffer> frame,
                                        std::shared_ptr<slot> s);
    boost::asio::awaitable<bool> write_response(const protocol::writer& w);
    boost::asio::awaitable<bool> write_response_tls(const protocol::writer& w);
    /// The handshake and, on SSL, the principal from the client certificate; false: closed.
    boost::asio::awaitable<bool> tls_handshake();
    /// Reads exactly `b` (from TLS when it is on).
    boost::asio::awaitable<void> read_exactly(boost::asio::mutable_buffer b,
                                              boost::system::error_code& ec);
    /// The TCP socket (under TLS when it is on).
    boost::asio::ip::tcp::socket& sock() { return tls_ ? tls_->next_layer() : socket_; }
    void close();
    void wake(boost::asio::steady_timer& t) { t.cancel(); }

    boost::asio::ip::tcp::socket socket_;  // plaintext; moved into tls_ on TLS listeners
    std::shared_ptr<auth::tls_server_context> tls_context_;
    std::unique_ptr<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>> tls_;
    services& svc_;
    dispatcher& dispatcher_;
    connection_info info_;
    connection_security security_;
    std::deque<std::shared_ptr<slot>> pending_;
    boost::asio::steady_timer writer_wakeup_;
    boost::asio::steady_timer reader_wakeup_;
    boost::asio::steady_timer idle_timer_;
    std::chrono::steady_clock::time_point last_activity_;
    /// Quota throttling: no request is read before this time.
    std::chrono::steady_clock::time_point muted_until_{};
    bool closed_ = false;
    bool reader_done_ = false;
    bool stopping_ = false;  // stop() was called: no new request is read
};

}  // namespace sluice::gateway
