// The upstream cluster's brokers as the Kafka proxy knows them (owned by gateway/proxy): asked
// at start and every proxy.metadata.refresh.ms over protocol/'s codec (ApiVersions, then
// Metadata for no topic), and learnt from every Metadata response that passes through. Each
// change (a broker joined, left or moved) is logged once and handed to the subscribers (the
// proxy listeners, which open and close node ports); so is the list after every refresh, so
// that a node port that could not be bound is tried again.
//
//   refresh loop (io context 0) --Metadata--> observe() <-- proxy connections (any thread)
//                                                 |
//                                                 +--> subscribers(brokers), on io context 0
//
// Lifecycle: built by run_server with the bootstrap list; start() spawns the refresh loop on
// the executor given; stop() ends it. Destroy after the io threads stopped.
// Concurrency: observe(), brokers() and pick() from any thread (a mutex); subscribers are
// called on the refresh executor, one change at a time, in order.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "gateway/proxy/response_rewrite.h"
#include "gateway/proxy/upstream_login.h"

namespace sluice::gateway::proxy {

/// A host and port to connect to.
struct upstream_address {
    std::string host;
    std::int32_t port = 0;
    bool operator==(const upstream_address&) const = default;
};

/// Parses `HOST:PORT[,HOST:PORT...]` (upstream.bootstrap.servers); throws config-style
/// std::invalid_argument naming the bad entry.
std::vector<upstream_address> parse_bootstrap_servers(const std::string& servers);

class upstream_topology {
public:
    /// Called with the whole broker list after each change and each refresh.
    using subscriber = std::function<void(const std::map<std::int32_t, upstream_broker>&)>;

    /// `login`: the gateway's credentials for the upstream (upstream.sasl.*), used on the
    /// refresh connections and by every proxy connection (login()). `tls`: the client TLS
    /// context of every upstream connection (upstream.security.protocol SSL / SASL_SSL), null
    /// for plaintext.
    upstream_topology(std::vector<upstream_address> bootstrap, std::chrono::milliseconds refresh,
                      std::chrono::milliseconds request_timeout, upstream_login login = {},
                      std::shared_ptr<auth::tls_client_context> tls = nullptr);
    upstream_topology(const upstream_topology&) = delete;
    upstream_topology& operator=(const upstream_topology&) = delete;

    /// Before start().
    void subscribe(subscriber s) { subscribers_.push_back(std::move(s)); }
    void start(boost::asio::any_io_executor ex);
    void stop();

    /// A Metadata response's broker list (complete: a broker not in it is gone).
    void observe(const std::vector<upstream_broker>& brokers);
    /// Where upstream node `node_id` listens, if known.
    std::optional<upstream_address> address_of(std::int32_t node_id) const;
    /// Somewhere to send a bootstrap connection: a known broker (round robin), else a
    /// bootstrap server.
    upstream_address pick();
    std::map<std::int32_t, upstream_broker> brokers() const;
    std::chrono::milliseconds request_timeout() const { return request_timeout_; }
    const upstream_login& login() const { return login_; }
    const std::shared_ptr<auth::tls_client_context>& tls() const { return tls_; }
    /// The API versions the upstream offered at the last refresh (empty before the first):
    /// what a SASL listener answers ApiVersions with before the client's login.
    std::vector<std::pair<std::int16_t, version_range>> upstream_versions() const;

private:
    boost::asio::awaitable<void> refresh_loop();
    /// One refresh against one address; the broker list, or an error message.
    boost::asio::awaitable<std::optional<std::vector<upstream_broker>>> ask(upstream_address at,
                                                                            std::string& why);
    void notify();

    const std::vector<upstream_address> bootstrap_;
    const std::chrono::milliseconds refresh_;
    const std::chrono::milliseconds request_timeout_;
    const upstream_login login_;
    const std::shared_ptr<auth::tls_client_context> tls_;
    std::vector<subscriber> subscribers_;
    mutable std::mutex mu_;
    std::map<std::int32_t, upstream_broker> brokers_;  // guarded by mu_
    std::size_t next_pick_ = 0;                         // guarded by mu_
    std::vector<std::pair<std::int16_t, version_range>> versions_;  // guarded by mu_
    std::optional<boost::asio::any_io_executor> executor_;
    std::unique_ptr<boost::asio::steady_timer> timer_;
    std::atomic<bool> stopping_{false};
};

}  // namespace sluice::gateway::proxy
