// What a Kafka request handler knows about the request it serves: the header, the connection
// it came on, and the broker's services. Created by the dispatcher per request; lives until the
// handler's coroutine completes. Used only on the connection's io thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "auth/sasl/sasl_server.h"
#include "gateway/core/busy_time.h"
#include "gateway/core/config.h"
#include "gateway/kafka/services.h"
#include "protocol/kafka/header.h"

namespace sluice::gateway {

/// Facts about one client connection, fixed after accept.
struct connection_info {
    std::uint64_t id = 0;
    boost::asio::ip::tcp::endpoint peer;
    boost::asio::ip::tcp::endpoint local;  // the address the client reached us on
    int socket_fd = -1;                      // for TCP_INFO reads (round-trip time)
};

/// Who is on the other end of one connection, and how far its SASL login got. Owned by the
/// connection, changed only by the SASL handlers (on the connection's thread).
///
///   SASL listener:  unauthenticated --SaslHandshake--> exchange --SaslAuthenticate...--> principal
///                   principal --(session expires)--> refused: only SaslHandshake and
///                   SaslAuthenticate get through (KIP-368 re-authentication), else closed
///   plaintext:      principal User:ANONYMOUS from the start
struct connection_security {
    using clock = std::chrono::steady_clock;

    security_protocol protocol = security_protocol::plaintext;
    /// The exchange SaslHandshake started; null before it and after it ended.
    std::unique_ptr<auth::sasl_server> sasl;
    /// SaslHandshake v0: the SASL tokens follow as bare size-prefixed frames, not as
    /// SaslAuthenticate requests (KIP-43).
    bool raw_sasl_tokens = false;
    /// "User:NAME" once authenticated; Kafka's "User:ANONYMOUS" on a plaintext listener.
    std::string principal;
    /// The mechanism of the completed login (a re-authentication must use the same one).
    std::string mechanism;
    /// When the session ends (connections.max.reauth.ms, a token's expiry); the epoch: never.
    clock::time_point session_expiry{};
    /// What SaslAuthenticate v1+ told the client (session_lifetime_ms); 0: no limit.
    std::int64_t session_lifetime_ms = 0;
    /// The login went through SaslAuthenticate v1+, so the client may re-authenticate.
    bool can_reauthenticate = false;

    explicit connection_security(security_protocol p = security_protocol::plaintext)
        : protocol(p) {
        if (!requires_sasl()) {
            principal = "User:ANONYMOUS";
        }
    }
    bool requires_sasl() const {
        return protocol == security_protocol::sasl_plaintext ||
               protocol == security_protocol::sasl_ssl;
    }
    bool session_expired(clock::time_point now = clock::now()) const {
        return session_expiry != clock::time_point{} && now >= session_expiry;
    }
    /// Logged in and the session has not expired: what every API but the SASL ones requires.
    bool authenticated() const { return !principal.empty() && !session_expired(); }
};

class request_context {
public:
    request_context(services& svc, const connection_info& conn, connection_security& security,
                    const protocol::kafka::request_header& header,
                    boost::asio::any_io_executor executor)
        : svc_(svc),
          conn_(conn),
          security_(security),
          header_(header),
          executor_(std::move(executor)) {}

    services& svc() const { return svc_; }
    const connection_info& connection() const { return conn_; }
    /// The connection's login state (SaslHandshake and SaslAuthenticate change it).
    connection_security& security() const { return security_; }
    /// "User:NAME", or "User:ANONYMOUS" on a plaintext listener: what the authorizer checks.
    const std::string& principal() const { return security_.principal; }
    const protocol::kafka::request_header& header() const { return header_; }
    std::int16_t version() const { return header_.api_version; }
    const std::string& client_id() const {
        static const std::string none;
        return header_.client_id ? *header_.client_id : none;
    }
    const boost::asio::any_io_executor& executor() const { return executor_; }

    /// acks=0 produce: the dispatcher sends nothing back.
    void suppress_response() { suppress_response_ = true; }
    bool response_suppressed() const { return suppress_response_; }

    /// Ask the connection to close after this request (e.g. acks=0 produce that failed, which
    /// Kafka signals by disconnecting so the client refreshes its metadata).
    void close_connection_after() { close_after_ = true; }
    bool close_after() const { return close_after_; }

    /// A quota throttled this request for `ms` (the response's throttle_time_ms): the
    /// connection reads nothing more for that long; with `delay_response` (requests older than
    /// KIP-219: Produce < v6, Fetch < v8) the response itself waits that long too.
    void throttle(std::chrono::milliseconds ms, bool delay_response) {
        if (ms > throttle_) {
            throttle_ = ms;
        }
        delay_response_ = delay_response_ || delay_response;
    }
    std::chrono::milliseconds throttled_for() const { return throttle_; }
    bool delay_response() const { return delay_response_; }

    /// The principal has a request_percentage quota: the dispatcher runs the handler on a
    /// metered_executor and this clock holds its io-thread time so far; null otherwise.
    void meter_with(std::shared_ptr<busy_clock> clock) { busy_ = std::move(clock); }
    const std::shared_ptr<busy_clock>& busy() const { return busy_; }

private:
    services& svc_;
    const connection_info& conn_;
    connection_security& security_;
    const protocol::kafka::request_header& header_;
    boost::asio::any_io_executor executor_;
    bool suppress_response_ = false;
    bool close_after_ = false;
    std::chrono::milliseconds throttle_{0};
    bool delay_response_ = false;
    std::shared_ptr<busy_clock> busy_;
};

/// The host:port clients are told to use: --advertise-kafka, else the address this client
/// reached us on (so a client never gets an address it cannot reach).
inline std::pair<std::string, std::int32_t> advertised_kafka_address(const request_context& ctx) {
    const auto& adv = ctx.svc().kafka.advertised;
    if (!adv.host.empty()) {
        return {adv.host, adv.port};
    }
    const auto& local = ctx.connection().local;
    auto addr = local.address();
    if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
        addr = boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, addr.to_v6());
    }
    return {addr.to_string(), local.port()};
}

}  // namespace sluice::gateway
