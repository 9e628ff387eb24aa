// One Kafka listener: the Kafka protocol plugged into a tcp_listener, speaking one security
// protocol (PLAINTEXT; SSL: TLS first; SASL_PLAINTEXT: clients log in first; SASL_SSL: TLS,
// then the login). Each accepted socket becomes a kafka_connection on the socket's
// io_context; on TLS listeners it gets the holder's current context (SIGHUP swaps it). Lifecycle: constructed by run_server
// (binds at once), start() once; stop() stops accepting (existing connections are stopped
// through the connection_tracker). Thread-safe start/stop.
#pragma once

#include <cstdint>
#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include "auth/tls/tls_context.h"
#include "gateway/kafka/dispatcher.h"
#include "gateway/core/config.h"
#include "gateway/core/connection_tracker.h"
#include "gateway/core/io_pool.h"
#include "gateway/kafka/services.h"
#include "gateway/core/tcp_listener.h"

namespace sluice::gateway {

class kafka_listener {
public:
    /// Binds and listens immediately (throws std::runtime_error naming --kafka and the
    /// address on failure). `tls` is required for SSL and SASL_SSL, null otherwise.
    kafka_listener(io_pool& pool, services& svc, connection_tracker& tracker,
                   const kafka_listener_config& where,
                   std::shared_ptr<auth::tls_context_holder> tls = nullptr);


    /// The bound address (the real port when listening on port 0).
    boost::asio::ip::tcp::endpoint local_endpoint() const { return listener_.local_endpoint(); }

    void start() { listener_.start(); }
    void stop() { listener_.stop(); }

private:
    /// The connection_handler: finish = stop reading and answer what was read; cut = close.
    connection_session open(boost::asio::ip::tcp::socket socket, std::uint64_t id);

    services& svc_;
    security_protocol security_;
    std::shared_ptr<auth::tls_context_holder> tls_;
    dispatcher dispatcher_;
    tcp_listener listener_;
};

}  // namespace sluice::gateway
