// The dispatcher: what every Kafka request shares. It checks the API and version against the
// handler registry, decodes the body with the generated codec, runs the handler, encodes the
// response with its header, and records metrics. A request that cannot be served is answered
// as Kafka answers it: a too-new ApiVersions gets the v0 error form (KIP-511); an unknown API,
// an unsupported version or a body that does not parse closes the connection. On a SASL
// listener, until the connection is authenticated, only ApiVersions, SaslHandshake and
// SaslAuthenticate are served (anything else closes it, as Kafka does), and after a
// SaslHandshake v0 the next frames are bare SASL tokens, answered as bare frames.
//
// Stateless apart from the handler table and per-API metrics; shared by all connections.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>

#include <boost/asio/awaitable.hpp>

#include "gateway/kafka/request_context.h"
#include "gateway/core/metrics.h"
#include "protocol/core/bytes.h"

namespace sluice::gateway {

/// One API the Kafka front serves: the range it advertises and its entry point.
struct handler_entry {
    std::int16_t api_key = -1;
    std::int16_t min_version = 0;
    std::int16_t max_version = -1;
    /// Decodes the body from `r`, runs the handler, encodes the response body into `w`.
    /// Returns false when the body did not decode.
    boost::asio::awaitable<bool> (*invoke)(request_context&, protocol::reader&,
                                           protocol::writer&) = nullptr;

    bool supports(std::int16_t v) const { return v >= min_version && v <= max_version; }
};

/// Every handler, ascending by API key (defined in handlers/registry.cc).
std::span<const handler_entry> handler_registry();

/// The outcome of one request for the connection.
struct dispatch_result {
    enum class action { respond, no_response, close } what = action::respond;
    protocol::writer response;  // the complete frame, size prefix included
    bool close_after = false;
    /// Quota throttling (request_context::throttle): mute the connection this long, and with
    /// `delay` hold the response back as long.
    std::chrono::milliseconds throttle{0};
    bool delay = false;
};

class dispatcher {
public:
    explicit dispatcher(services& svc);

    /// Handles one request frame (without its size prefix). `frame` owns the bytes; record
    /// batches in the request stay views into it. `security` is the connection's login state.
    boost::asio::awaitable<dispatch_result> dispatch(const connection_info& conn,
                                                     connection_security& security,
                                                     std::shared_ptr<protocol::byte_buffer> frame);

private:
    /// A bare SASL token after SaslHandshake v0 (KIP-43): the reply goes back as a bare frame;
    /// a failed login closes the connection (v0 has no way to say why).
    boost::asio::awaitable<dispatch_result> raw_sasl_token(
        const connection_info& conn, connection_security& security,
        std::shared_ptr<protocol::byte_buffer> frame);

    struct api_metrics {
        counter* requests = nullptr;
        counter* errors = nullptr;
        histogram* latency = nullptr;
    };
    services& svc_;
    std::array<const handler_entry*, 128> table_{};
    std::array<api_metrics, 128> metrics_{};
    counter* malformed_ = nullptr;
};

}  // namespace sluice::gateway
