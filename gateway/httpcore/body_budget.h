// The bound on HTTP request bodies read but not yet answered, across every connection of the
// HTTP front and the SQS front (http.request.body.budget.bytes), so that many clients sending
// large bodies at once cannot make the process allocate without limit: the Kafka front's
// queued.max.request.bytes for HTTP. Built by run_server before the io threads, shared by the
// two listeners' http_connections (http_limits::body_budget); closed at shutdown.
//
// A connection reserves a body's bytes after its header has been read, authenticated and
// routed, and before it reads the body: the Content-Length at once, a chunked body step by
// step as it arrives (up to http.request.max.bytes). The bytes are given back when the answer
// has been written. While the budget is spent the connection does not read the body (the
// client's TCP window fills); after http.request.body.budget.wait.ms without room the request
// is answered 503 with Retry-After and the connection closes. A single body larger than the
// whole budget is let through when nothing else is held, so that a valid request is never
// unanswerable; the bytes held never exceed the larger of the budget and the body limit.
#pragma once

#include <chrono>
#include <cstdint>

#include <boost/asio/awaitable.hpp>

#include "gateway/core/metrics.h"
#include "gateway/core/request_budget.h"

namespace sluice::gateway {

/// Concurrency: thread-safe (connections on every io thread call it). Lifecycle: outlives every
/// connection and reservation; close() ends every wait (run_server, after the grace period).
class body_budget {
public:
    /// `max_bytes` >= 1; `max_wait`: how long one request may wait for room.
    body_budget(std::int64_t max_bytes, std::chrono::milliseconds max_wait,
                metrics_registry& metrics);

    using reservation = request_budget::reservation;

    /// Makes `r` hold at least `bytes`: takes them (r empty) or grows r to them, waiting at
    /// most max_wait(). False when there was no room in time, or cancel(owner) or close() ended
    /// the wait (r is then unchanged). Runs on the caller's executor.
    boost::asio::awaitable<bool> reserve(reservation& r, std::int64_t bytes, const void* owner);

    /// Ends the wait of `owner` (a stopping connection), if any. Any thread.
    void cancel(const void* owner) { budget_.cancel(owner); }
    void close() { budget_.close(); }

    /// Counts a request answered 503 because no room was found in time.
    void count_refusal() { refused_.inc(); }

    std::chrono::milliseconds max_wait() const { return max_wait_; }
    std::int64_t max_bytes() const { return max_bytes_; }
    std::int64_t held_bytes() const { return budget_.queued_bytes(); }
    std::size_t waiting() const { return budget_.waiting(); }

private:
    std::int64_t max_bytes_;
    request_budget budget_;
    std::chrono::milliseconds max_wait_;
    counter& refused_;
};

}  // namespace sluice::gateway
