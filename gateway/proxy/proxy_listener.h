// One `--kafka` listener in upstream mode: the Kafka proxy's bootstrap port plus one port per
// upstream broker (node N on port_base + N of the same host), advertised with the listener's
// advertised host. The node ports follow the topology: a broker that joins gets its port, one
// that leaves loses it, without a restart (each change logged once).
//
//   --kafka HOST:P  (bootstrap: any live broker)      upstream_topology --brokers--+
//   HOST:base+1     (node 1)  --> proxy_connection --> broker 1                     |
//   HOST:base+2     (node 2)  --> proxy_connection --> broker 2   <-- opened/closed -+
//
// With proxy.sni.host.pattern (TLS listeners only) no node ports are bound: the bootstrap port
// serves every node, advertised as the pattern's name for it, and each connection's TLS server
// name picks its node (proxy_connection).
//
// Lifecycle: constructed by run_server (binds the bootstrap port at once), start() once
// (subscribes to the topology before it starts), stop() once. A node port is bound when its
// broker is first known; a port that cannot be bound is logged and tried again after 1 s,
// then after twice as long each time up to 16 s (and at every refresh).
// Concurrency: brokers_changed runs on the topology's executor; start/stop from any thread
// (a mutex guards the node listeners). Destroy after the io threads stopped.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gateway/core/config.h"
#include "gateway/core/connection_tracker.h"
#include "gateway/core/io_pool.h"
#include "gateway/core/metrics.h"
#include "gateway/core/tcp_listener.h"
#include "gateway/proxy/proxy_connection.h"
#include "gateway/proxy/sni_host_pattern.h"

namespace sluice::gateway::proxy {

class proxy_listener {
public:
    /// `port_base`: proxy.node.port.base, or 0 for the bound port + 1. `advertised_host`:
    /// --advertise-kafka's host, or empty for the listener's own (the host name when it
    /// listens on every address). Throws std::runtime_error when the bootstrap port cannot be
    /// bound, config_error when the node ports would not fit under 65536. `sasl`: a
    /// SASL_PLAINTEXT or SASL_SSL listener (its node ports too): clients log in at the
    /// gateway. `tls`: an SSL or SASL_SSL listener's context (its node ports too), null for
    /// plaintext; each connection takes the current one (reloads apply to new connections).
    /// `sni`: proxy.sni.host.pattern (TLS listeners only): no node ports, every node served on
    /// the bootstrap port and advertised as the pattern's name with `advertised_port` (0: the
    /// bound port); each connection's TLS server name picks its node.
    proxy_listener(io_pool& pool, connection_tracker& tracker, metrics_registry& metrics,
                   proxy_services& svc, const endpoint& where, std::int32_t port_base,
                   const std::string& advertised_host, bool sasl = false,
                   std::shared_ptr<auth::tls_context_holder> tls = nullptr,
                   std::optional<sni_host_pattern> sni = std::nullopt,
                   std::int32_t advertised_port = 0);
    proxy_listener(const proxy_listener&) = delete;
    proxy_listener& operator=(const proxy_listener&) = delete;

    boost::asio::ip::tcp::endpoint local_endpoint() const { return bootstrap_.local_endpoint(); }
    const node_addresses& addresses() const { return to_; }

    void start();
    void stop();
    /// The topology's subscriber: opens ports for new brokers, closes those of gone ones
    /// (nothing with SNI routing: the bootstrap port serves them all).
    void brokers_changed(const std::map<std::int32_t, upstream_broker>& brokers);

private:
    connection_session open(boost::asio::ip::tcp::socket socket, std::uint64_t id,
                            std::optional<std::int32_t> node);
    /// Arms the retry of the node ports that could not be bound (mu_ held).
    void retry_unbound();

    io_pool& pool_;
    connection_tracker& tracker_;
    metrics_registry& metrics_;
    proxy_services& svc_;
    std::string bind_host_;
    bool sasl_ = false;
    std::shared_ptr<auth::tls_context_holder> tls_;
    node_addresses to_;
    tcp_listener bootstrap_;
    std::mutex mu_;
    bool stopped_ = false;                                        // guarded by mu_
    std::map<std::int32_t, std::unique_ptr<tcp_listener>> nodes_;  // guarded by mu_
    /// Stopped node listeners, kept until destruction (their accept loop may still unwind).
    std::vector<std::unique_ptr<tcp_listener>> retired_;  // guarded by mu_
    /// The brokers last heard of, and those whose port could not be bound (logged as an error
    /// once, then tried again quietly until bound or gone).
    std::map<std::int32_t, upstream_broker> brokers_;  // guarded by mu_
    std::map<std::int32_t, std::int32_t> unbound_;     // node id -> port; guarded by mu_
    boost::asio::steady_timer retry_timer_;            // on io context 0, as the topology
    std::chrono::milliseconds retry_wait_{0};          // guarded by mu_
    bool retry_armed_ = false;                         // guarded by mu_
};

}  // namespace sluice::gateway::proxy
