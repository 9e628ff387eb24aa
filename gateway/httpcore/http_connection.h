// One HTTP/1.1 client connection of the HTTP server: reads a request, dispatches it through
// the router, writes the response, and again while the client keeps the connection alive.
//
//   idle --first byte--> reading --request--> handling (router) --response--> writing --+
//    ^                                                                                  |
//    +------------------------------- keep-alive ---------------------------------------+
//
// Pipelined requests are answered in order: the next request is parsed from the bytes
// already read only after the previous response is written.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include "auth/tls/tls_context.h"

#include "gateway/httpcore/cors.h"
#include "gateway/httpcore/request_framing.h"
#include "gateway/httpcore/router.h"
#include "gateway/core/connection_tracker.h"
#include "gateway/core/metrics.h"

namespace sluice::gateway {

class body_budget;

/// Every read of an HTTP connection has a size limit and a deadline.
struct http_limits {
    /// Larger bodies are answered 413 (the SQS listener's bound; the HTTP front's is
    /// http.request.max.bytes, 64 MiB, set by http_settings).
    std::uint64_t max_body_bytes = 16 * 1024 * 1024;
    /// Larger request lines plus headers are answered 431.
    std::uint32_t max_header_bytes = 16 * 1024;
    /// Reading one request, from its first byte to the end of its body.
    std::chrono::seconds request_timeout{60};
    /// Waiting for the first byte of the next request on a kept-alive connection.
    std::chrono::seconds idle_timeout{60};
    /// Writing one response.
    std::chrono::seconds write_timeout{60};
    /// The bound on request bodies held across every connection (http.request.body.budget.bytes,
    /// shared by the HTTP and SQS listeners); null: none (unit tests).
    body_budget* bodies = nullptr;
};

/// How a front answers what the connection itself refuses (a body over the limit, headers too
/// large, a request that does not parse): the status and a message to the response sent before
/// closing. The HTTP API's JSON error body when empty; the SQS front answers in SQS's shape.
using connection_error_page = std::function<http_response(unsigned status, std::string_view message)>;

/// One client connection (see the diagram above).
///
/// On an HTTPS listener the connection first runs the TLS handshake (bounded by
/// tls_handshake_timeout), then serves HTTP over it as above, and ends with a TLS close_notify
/// exchange (bounded by tls_shutdown_timeout); a connection that stop(finish) finds idle sends
/// its close_notify and closes without waiting for the client's. With a client certificate
/// (ssl.client.auth requested or required) its mapped subject is each request's principal
/// until the router's guard (http.authentication, SQS's SigV4) establishes another. The
/// connection keeps the TLS context it was accepted with (a reload changes new connections).
///
/// Reading a request: its whole header first, whose framing is checked (request_framing.h:
/// anything two parsers could frame differently is 400 and closes); then, on the header alone,
/// the CORS preflight or the router's admission (the route, its guard: authentication, ACLs,
/// quotas). A refused request is answered without its body being read, and the connection then
/// closes when a body was announced. An admitted request's body takes room in the shared body
/// budget (body_budget.h: the Content-Length at once, a chunked body as it grows; no room in
/// time is 503 with Retry-After and closes) before it is read (and before `100 Continue`);
/// the room is given back once the handler has answered.
///
/// Lifecycle: created by the http_server's connection handler; run() serves until the client
/// closes, a deadline passes, a request does not parse (answered 400, 413 or 431, then
/// closed), a handler takes the stream over and returns, or stop(). stop(finish) closes an
/// idle connection at once, lets a request being read or handled complete (its response says
/// "Connection: close") and tells a long-running handler through its finish_signal;
/// stop(cut) closes the socket.
/// Concurrency: everything runs on the socket's io_context; stop() may be called from any
/// thread (it posts). A handler exception is answered 500 (unless the handler had taken the
/// stream) and rethrown to the spawn boundary.

/// Latency histograms of answered requests by status class (sluice_http_request_seconds,
/// labelled front and code="2xx" ...): from the request's header read to its response
/// written. Upgrades and streams (WebSocket, SSE) are not timed.
class request_timing {
public:
    request_timing(metrics_registry& metrics, const std::string& front);
    void observe(unsigned status, std::chrono::nanoseconds took) const;
    /// The listener's front ("http", "sqs"), as the metrics and the audit log name it.
    const std::string& front() const { return front_; }

private:
    std::array<histogram*, 5> by_class_{};
    std::string front_;
};

class http_connection : public std::enable_shared_from_this<http_connection> {
public:
    http_connection(boost::asio::ip::tcp::socket socket, std::uint64_t id, const router& routes,
                    counter& requests, http_limits limits, connection_error_page errors = {},
                    const cors_policy* cors = nullptr, const request_timing* timing = nullptr,
                    std::shared_ptr<auth::tls_server_context> tls = nullptr);

    boost::asio::awaitable<void> run();
    void stop(stop_mode mode);

private:
    enum class phase { idle, reading, handling, writing, closing };

    /// Reads until buffer_ holds the next request's whole header (max_header_bytes), checking
    /// its raw bytes as they come: `refused` is set for a framing the connection refuses.
    boost::asio::awaitable<boost::system::error_code> read_header_bytes(
        std::optional<framing_error>& refused);
    boost::asio::awaitable<void> answer_error_and_close(unsigned status, std::string message);
    /// The body (`length` bytes, at most refused_body_drop_max_bytes) of a request refused on
    /// its header, read and dropped after the answer so that the connection can go on; false:
    /// the client did not send it in time, or closed.
    boost::asio::awaitable<bool> drop_small_body(std::uint64_t length);
    /// No room in the body budget in time (or a stop while waiting): 503 with Retry-After,
    /// then close.
    boost::asio::awaitable<void> refuse_for_room();
    /// After an answer that leaves part of the request unread: stops sending, then reads and
    /// drops at most `max_bytes` of it (at most linger_timeout) before the connection closes.
    boost::asio::awaitable<void> linger(std::size_t max_bytes);
    /// The TLS handshake and the client certificate's principal; false: close.
    boost::asio::awaitable<bool> start_tls();
    /// Ends the connection: a TLS close_notify first (bounded), then the socket is closed.
    boost::asio::awaitable<void> finish();
    void on_stop(stop_mode mode);
    void close();

    http_stream stream_;
    boost::beast::flat_buffer buffer_;
    connection_stream transport_;
    std::uint64_t id_;
    const router& routes_;
    counter& requests_;
    http_limits limits_;
    connection_error_page errors_;
    const cors_policy* cors_;  // null: no CORS
    const request_timing* timing_;  // null: not timed
    boost::asio::ip::tcp::endpoint peer_;
    std::shared_ptr<finish_signal> finish_;
    std::shared_ptr<auth::tls_server_context> tls_;  // null: plain HTTP
    /// "User:ANONYMOUS", or the client certificate's principal under TLS.
    std::string principal_ = "User:ANONYMOUS";
    phase phase_ = phase::idle;
    /// stop(finish) found the connection between requests: finish() sends close_notify
    /// without waiting for the client's.
    bool stopped_idle_ = false;
};

}  // namespace sluice::gateway
