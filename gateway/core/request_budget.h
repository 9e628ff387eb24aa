// A process-wide bound on request bytes read but not yet answered. Two are built by run_server:
// the Kafka front's (queued.max.request.bytes and queued.max.requests, Kafka's names), used by
// every kafka_connection (gateway/kafka/connection.cc), and the HTTP and SQS listeners' bound
// on request bodies (http.request.body.budget.bytes), used by every http_connection through
// gateway/httpcore/body_budget.h. Each connection bounds its own read-ahead; this bounds the sum
// over all connections, so that many clients sending large requests at once cannot make the
// process allocate without limit.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>

#include "gateway/core/metrics.h"

namespace sluice::gateway {

/// Bytes and requests read but not yet answered, across all connections of a front, with a FIFO
/// of parked readers.
///
///   reader --acquire(n)--> fits and nobody is parked? take : park at the back
///                                                              |
///   writer --release(n)--> grant parked readers from the front -+--post--> each reader's
///                          while they fit                                  own executor
///
/// A connection acquires after reading a frame's size prefix and before allocating the frame;
/// the reservation it gets back is released (by its destructor) when the response has been
/// written or the request dropped. While parked, the connection does not read its socket.
///
/// Admission: a request fits when one more request stays within max_requests and its bytes
/// within max_bytes, or when nothing at all is queued: a request larger than the whole byte
/// budget (possible up to socket.request.max.bytes) then runs alone rather than never, so the
/// peak is max(max_bytes, the largest single frame). Parked readers are granted strictly in
/// arrival order, so a large request at the front holds back smaller ones behind it and none
/// starves.
///
/// Growing: a reader that learns its size as it reads (an HTTP chunked body) holds a
/// reservation and grows it with grow(); more bytes fit within max_bytes, or when that
/// reservation is all that is queued (it then grows alone, as a large request runs alone).
///
/// Lifecycle: created by run_server before the io threads; connections cancel their own wait
/// when stopped or closed; close() (after the shutdown grace period, before the io threads
/// stop) completes whatever is still parked. No one may be parked when it is destroyed, and it
/// must outlive every reservation.
/// Concurrency: thread-safe (one mutex; connections call from every io thread). A parked
/// acquire always completes through a post to its caller's executor, never inline inside
/// release() or cancel(), and keeps that executor's context from running out of work.
class request_budget {
public:
    /// What the gauges and the counter are called in /metrics.
    struct metric_names {
        std::string bytes, bytes_help;        // gauge: bytes held
        std::string requests, requests_help;  // gauge: requests holding bytes
        std::string waiting, waiting_help;    // gauge: callers parked
        std::string waits, waits_help;        // counter: times a caller parked
    };
    /// The Kafka front's: sluice_kafka_queued_request_bytes and the rest.
    static metric_names kafka_metric_names();

    /// `max_bytes` < 0: no bound on bytes (Kafka's -1). `max_requests` must be at least 1.
    request_budget(std::int64_t max_bytes, std::int64_t max_requests, metrics_registry& metrics,
                   const metric_names& names = kafka_metric_names());
    ~request_budget();
    request_budget(const request_budget&) = delete;
    request_budget& operator=(const request_budget&) = delete;

    /// Bytes and one request taken from the budget; given back when destroyed or reset().
    /// Empty (false) when the wait was cancelled.
    class reservation {
    public:
        reservation() = default;
        reservation(reservation&& other) noexcept;
        reservation& operator=(reservation&& other) noexcept;
        ~reservation() { reset(); }

        explicit operator bool() const { return budget_ != nullptr; }
        std::int64_t bytes() const { return bytes_; }
        /// Gives the bytes and the request back now.
        void reset();

    private:
        friend class request_budget;
        reservation(request_budget* budget, std::int64_t bytes) : budget_(budget), bytes_(bytes) {}

        request_budget* budget_ = nullptr;
        std::int64_t bytes_ = 0;
    };

    /// Takes `bytes` and one request, parking the caller (FIFO) until they fit. `owner` names
    /// the caller for cancel(); one owner has at most one acquire parked at a time. Returns an
    /// empty reservation when cancel(owner) or close() ended the wait.
    boost::asio::awaitable<reservation> acquire(std::int64_t bytes, const void* owner);

    /// Adds `extra` bytes (no request) to `r`, a non-empty reservation of this budget, parking
    /// the caller (FIFO, with the acquires) until they fit. False, `r` unchanged, when
    /// cancel(owner) or close() ended the wait.
    boost::asio::awaitable<bool> grow(reservation& r, std::int64_t extra, const void* owner);

    /// Ends the parked acquire of `owner`, if any, with an empty reservation. Any thread.
    void cancel(const void* owner);

    /// Ends every parked acquire with an empty reservation, and every later one at once.
    void close();

    std::int64_t queued_bytes() const;
    std::int64_t queued_requests() const;
    /// Callers parked in acquire().
    std::size_t waiting() const;

private:
    class wakeup;
    template <typename Handler>
    class wakeup_for;
    struct parked {
        std::int64_t bytes;
        const void* owner;
        std::unique_ptr<wakeup> wake;
        /// A grow(): the bytes its reservation already holds; -1 for an acquire (a request).
        std::int64_t held = -1;
    };
    using wakeups = std::vector<std::pair<std::unique_ptr<wakeup>, bool>>;

    /// `held` < 0: a new request of `bytes`; otherwise `bytes` more for a reservation that
    /// holds `held`. mu_ held.
    bool fits(std::int64_t bytes, std::int64_t held) const;
    void take(std::int64_t bytes, std::int64_t held);  // mu_ held
    /// Moves the parked callers that now fit, from the front, into `out` (granted). mu_ held.
    void grant_from_front(wakeups& out);
    void park(parked p);
    void release(std::int64_t bytes);
    void publish();  // mu_ held: the gauges follow the counters
    static void complete(wakeups& w);

    const std::int64_t max_bytes_;
    const std::int64_t max_requests_;
    mutable std::mutex mu_;
    std::int64_t bytes_ = 0;
    std::int64_t requests_ = 0;
    bool closed_ = false;
    std::deque<parked> parked_;
    gauge& bytes_gauge_;
    gauge& requests_gauge_;
    gauge& waiting_gauge_;
    counter& waits_;
};

}  // namespace sluice::gateway
