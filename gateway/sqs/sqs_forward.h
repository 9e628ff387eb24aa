// Forwarding SQS requests to the gateway that owns the queues (owned by gateway/sqs): in
// upstream mode several gateways serve the same queues and one of them (the owner) holds their
// state; the others pass each request on to it as it came (method, target, headers, body: a
// SigV4 signature covers the Host header's value and the body, not the connection, so the
// owner verifies it as if the client had called it directly).
//
// The front asks its forwarder first for every request: serve it here, or here is the owner's
// answer, or no owner can be reached (503 ServiceUnavailable, which the SDKs retry).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "gateway/httpcore/router.h"

namespace sluice::gateway::sqs {

/// The header a forwarding gateway adds (not signed, so SigV4 ignores it): the gateway that
/// gets it never forwards the request again.
inline constexpr const char* forwarded_header = "X-Sluice-Forwarded";
/// The header of the 503 a gateway answers a forwarded request with when it does not own the
/// queues (any more): the forwarding gateway looks for the owner again instead of passing the
/// 503 on.
inline constexpr const char* not_owner_header = "X-Sluice-Not-Owner";

struct forward_outcome {
    /// The owner's answer, as it came (hop-by-hop headers dropped).
    std::optional<http_response> answer;
    /// Not empty: no owner could be reached in time; why (the front answers 503).
    std::string unavailable;
    /// With `unavailable`: the request was forwarded here and this gateway owns nothing
    /// (the answer carries not_owner_header).
    bool not_owner = false;
    bool local() const { return !answer && unavailable.empty(); }
};

/// The last path segment of a QueueUrl (its query string dropped), as the front reads the
/// queue's name; empty when there is none. Not checked as a queue name.
std::string_view queue_name_in_url(std::string_view url);

/// The queue name a SendMessage or SendMessageBatch request names in its QueueUrl (either
/// wire: JSON 1.0 or Query); nullopt for any other request, or one that does not parse (the
/// front answers it). Read before the request is routed: a gateway that does not own the
/// queues sends a standard queue's messages itself.
std::optional<std::string> sent_to_queue(const http_request_context& ctx);

/// Decides where each SQS request is served. Concurrency: thread-safe; resumes on the
/// caller's executor.
class sqs_forwarder {
public:
    virtual ~sqs_forwarder() = default;
    virtual boost::asio::awaitable<forward_outcome> route(const http_request_context& ctx) = 0;
};

/// Keep-alive connections to the owners that forwarded requests reuse, instead of one new
/// connection per request.
///
/// send() takes an idle connection to the owner's URL (or opens one), sends the request, reads
/// the answer and keeps the connection for the next request when the owner keeps it open. A
/// pooled connection the owner has closed (its idle timeout, a restart) is found dead before
/// the request is written, or when not one byte of it could be written: the request was
/// certainly not sent, and it goes once more on a fresh connection. Any later failure is
/// answered as an error (the request may have been served: never sent twice).
/// A connection is reused only by requests on the io context it was opened on.
/// Bounded: at most `max_idle` idle connections per owner are kept (the busy ones are as many
/// as forwarded requests in flight, one per client connection at most), and none idle longer
/// than `max_idle_age` (below the owner's idle timeout, 60 s, so that it never closes one
/// under a request).
/// Concurrency: thread-safe; a connection is used by one request at a time. Lifecycle:
/// close() while the io threads still run (idle sockets belong to their io_contexts).
class forward_pool {
public:
    explicit forward_pool(std::size_t max_idle = 16,
                          std::chrono::milliseconds max_idle_age = std::chrono::seconds(30));
    ~forward_pool();
    forward_pool(const forward_pool&) = delete;
    forward_pool& operator=(const forward_pool&) = delete;

    /// Sends `req` to the SQS base URL `base` (http://HOST:PORT; https is not supported) and
    /// reads the answer, all within `timeout`. nullopt with `error` set when the owner cannot
    /// be reached or does not answer in time.
    boost::asio::awaitable<std::optional<http_response>> send(std::string base, http_request req,
                                                              std::chrono::milliseconds timeout,
                                                              std::string* error);

    /// Closes the idle connections and keeps none from now on: before the io threads stop
    /// (a socket must go before its io_context).
    void close();

    /// Connections opened so far (to every owner).
    std::uint64_t opened() const { return opened_.load(std::memory_order_relaxed); }

private:
    struct connection;
    std::unique_ptr<connection> take(const std::string& base,
                                     const boost::asio::any_io_executor& ex);
    void give_back(const std::string& base, std::unique_ptr<connection> c);

    std::size_t max_idle_;
    std::chrono::milliseconds max_idle_age_;
    std::mutex mu_;
    std::map<std::string, std::deque<std::unique_ptr<connection>>> idle_;
    bool closed_ = false;
    std::atomic<std::uint64_t> opened_{0};
};

}  // namespace sluice::gateway::sqs
