// The one TCP accept loop of the process. Every front (Kafka, HTTP, later SQS) owns a
// tcp_listener and plugs its protocol in as a connection_handler; nothing else accepts sockets.
//
//   acceptor (io context 0) --accept--> socket on pool.next() --handler--> connection_session
//        |                                                                      |
//        +-- backoff on accept errors          tracker.enter(stop) ... run ... tracker.leave
//
// Owned by its front; the front's owner (run_server) calls start() once and stop() once.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gateway/core/config.h"
#include "gateway/core/connection_tracker.h"
#include "gateway/core/io_pool.h"
#include "gateway/core/listening_sockets.h"
#include "gateway/core/metrics.h"

namespace sluice::gateway {

/// One accepted connection as its protocol serves it.
struct connection_session {
    /// Serves the connection to its end, on the socket's executor. An exception escaping it is
    /// a bug: the listener logs it with the connection id and counts it.
    boost::asio::awaitable<void> run;
    /// What "finish" and "cut" mean for this protocol (connection_tracker::stop_function):
    /// callable from any thread, before, during or after `run`; must not block.
    connection_tracker::stop_function stop;
};

/// The protocol's side of a listener: turns an accepted socket and its connection id into a
/// session. Called once per connection, on the socket's executor, before anything reads it.
/// May throw (counted like an exception escaping `run`).
using connection_handler =
    std::function<connection_session(boost::asio::ip::tcp::socket socket, std::uint64_t id)>;

/// What a listener is called and how it reports.
struct listener_options {
    /// Label value on the listener metrics and prefix of its log lines: "kafka", "http", "sqs".
    std::string name;
    /// The command-line flag that configured the address, for error messages: "--kafka".
    std::string flag;
    /// Also counts accepted connections under this older metric name, when not empty.
    std::string legacy_accepted_metric;
};

/// Binds a TCP port and runs the accept loop of one front.
///
/// Accepted sockets are spread round-robin over the io_pool; each connection is registered
/// with the connection_tracker (so shutdown can finish and cut it) and served as one coroutine
/// on its socket's io_context. Accept errors (EMFILE, ENFILE, ENOBUFS, ...) pause the loop
/// with a bounded exponential backoff (5 ms doubling to 1 s, reset by the next success),
/// logged once per burst. Metrics, labelled listener="<name>":
///   sluice_connections_accepted_total, sluice_connection_failures_total (exceptions escaping
///   a connection), sluice_accept_errors_total, sluice_listener_open_connections.
///
/// Lifecycle: the constructor takes the socket run_server bound for its address from the
/// io_pool, or binds and listens itself (throws std::runtime_error naming the flag and the
/// address); start() launches the accept loop; stop() closes the acceptor (existing
/// connections are stopped through the tracker). Destroy it only after the pool has stopped
/// or the accept loop has ended.
/// Concurrency: start() and stop() from any thread; the loop runs on the pool's context 0.
class tcp_listener {
public:
    static constexpr auto min_backoff = std::chrono::milliseconds(5);
    static constexpr auto max_backoff = std::chrono::milliseconds(1000);

    tcp_listener(io_pool& pool, connection_tracker& tracker, metrics_registry& metrics,
                 listener_options options, const endpoint& where, connection_handler handler);
    tcp_listener(const tcp_listener&) = delete;
    tcp_listener& operator=(const tcp_listener&) = delete;

    /// The bound address (the real port when listening on port 0).
    boost::asio::ip::tcp::endpoint local_endpoint() const { return local_; }
    const std::string& name() const { return options_.name; }

    void start();
    /// Stops accepting. Idempotent.
    void stop();

private:
    class stop_slot;

    boost::asio::awaitable<void> accept_loop();
    boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket, std::uint64_t id,
                                       std::shared_ptr<stop_slot> slot);
    void connection_ended(std::uint64_t id, std::exception_ptr failure);

    io_pool& pool_;
    connection_tracker& tracker_;
    listener_options options_;
    connection_handler handler_;
    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::steady_timer backoff_timer_;
    boost::asio::ip::tcp::endpoint local_;
    std::atomic<bool> stopping_{false};
    counter& accepted_;
    counter* legacy_accepted_ = nullptr;
    counter& failures_;
    counter& accept_errors_;
    gauge& open_;
};

}  // namespace sluice::gateway
