// Forwarding SQS requests to the gateway that owns the queues (owned by gateway/sqs): in
// upstream mode several gateways serve the same queues and one of them (the owner) holds their
// state; the others pass each request on to it as it came (method, target, headers, body: a
// SigV4 signature covers the Host header's value and the body, not the connection, so the
// owner verifies it as if the client had called it directly).
//
// The front asks its forwarder first for every request: serve it here, or here is the owner's
// answer, or no owner can be reached (503 ServiceUnavailable, which the SDKs retry).
#pragma once

#include <chrono>
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

/// Decides where each SQS request is served. Concurrency: thread-safe; resumes on the
/// caller's executor.
class sqs_forwarder {
public:
    virtual ~sqs_forwarder() = default;
    virtual boost::asio::awaitable<forward_outcome> route(const http_request_context& ctx) = 0;
};

/// Sends `req` to the SQS base URL `base` (http://HOST:PORT; https is not supported) on a
/// connection of its own and reads the answer, all within `timeout`. nullopt with `error` set
/// when the owner cannot be reached or does not answer in time.
boost::asio::awaitable<std::optional<http_response>> forward_http(const std::string& base,
                                                                  http_request req,
                                                                  std::chrono::milliseconds timeout,
                                                                  std::string* error);

}  // namespace sluice::gateway::sqs
