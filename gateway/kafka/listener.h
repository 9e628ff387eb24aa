// The Kafka listener: accepts TCP connections and starts a kafka_connection for each on the
// next io_context of the pool. Lifecycle: start() once; stop() closes the acceptor (existing
// connections are stopped through the connection_tracker). Thread-safe start/stop.
#pragma once

#include <memory>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "gateway/kafka/dispatcher.h"
#include "gateway/server/config.h"
#include "gateway/server/connection_tracker.h"
#include "gateway/server/io_pool.h"
#include "gateway/server/services.h"

namespace sluice::gateway {

class kafka_listener {
public:
    /// Binds and listens immediately (throws std::runtime_error naming the address on failure).
    kafka_listener(io_pool& pool, services& svc, connection_tracker& tracker,
                   const endpoint& where);

    /// The bound address (the real port when listening on port 0).
    boost::asio::ip::tcp::endpoint local_endpoint() const;

    void start();
    void stop();

private:
    boost::asio::awaitable<void> accept_loop();

    io_pool& pool_;
    services& svc_;
    connection_tracker& tracker_;
    dispatcher dispatcher_;
    boost::asio::ip::tcp::acceptor acceptor_;
    counter& accepted_;
};

}  // namespace sluice::gateway
