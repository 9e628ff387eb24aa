#include "gateway/proxy/proxy_listener.h"

#include <boost/asio/ip/host_name.hpp>

#include "gateway/proxy/logger.h"

namespace sluice::gateway::proxy {
using boost::asio::ip::tcp;

namespace {

/// The listener options of the bootstrap port and the node ports (metrics and log lines).
listener_options proxy_listener_options(const std::string& name) {
    return listener_options{name, "--kafka", ""};
}

std::string proxy_advertised_host(const std::string& advertised, const tcp::endpoint& bound) {
    if (!advertised.empty()) {
        return advertised;
    }
    return bound.address().is_unspecified() ? boost::asio::ip::host_name()
                                            : bound.address().to_string();
}

}  // namespace

proxy_listener::proxy_listener(io_pool& pool, connection_tracker& tracker,
                               metrics_registry& metrics, proxy_services& svc,
                               const endpoint& where, std::int32_t port_base,
                               const std::string& advertised_host, bool sasl,
                               std::shared_ptr<auth::tls_context_holder> tls,
                               std::optional<sni_host_pattern> sni,
                               std::int32_t advertised_port)
    : pool_(pool),
      tracker_(tracker),
      metrics_(metrics),
      svc_(svc),
      bind_host_(where.host),
      sasl_(sasl),
      tls_(std::move(tls)),
      bootstrap_(pool, tracker, metrics, proxy_listener_options("kafka"), where,
                 [this](tcp::socket socket, std::uint64_t id) {
                     return open(std::move(socket), id, std::nullopt);
                 }),
      retry_timer_(pool.context(0)) {
    to_.host = proxy_advertised_host(advertised_host, bootstrap_.local_endpoint());
    const auto bound_port = static_cast<std::int32_t>(bootstrap_.local_endpoint().port());
    if (sni) {
        to_.sni = std::move(sni);
        to_.port_base = advertised_port > 0 ? advertised_port : bound_port;
    } else {
        to_.port_base = port_base > 0 ? port_base : bound_port + 1;
    }
}

void proxy_listener::start() {
    bootstrap_.start();
    if (to_.sni) {
        proxy_log().info("Kafka proxy on {}:{} ({}): upstream node N served on this port as {} "
                         "(SNI routing; advertised port {}), other names as the bootstrap {}",
                         bind_host_, bootstrap_.local_endpoint().port(),
                         sasl_ ? "SASL_SSL" : "SSL", to_.sni->text(), to_.port_base, to_.host);
        return;
    }
    proxy_log().info("Kafka proxy on {}:{}{}: upstream node N served on port {} + N of {}",
                     bind_host_, bootstrap_.local_endpoint().port(),
                     tls_ ? (sasl_ ? " (SASL_SSL)" : " (SSL)") : (sasl_ ? " (SASL_PLAINTEXT)" : ""),
                     to_.port_base, to_.host);
}

void proxy_listener::stop() {
    bootstrap_.stop();
    std::lock_guard lock(mu_);
    stopped_ = true;
    retry_timer_.cancel();
    for (auto& [id, l] : nodes_) {
        l->stop();
        retired_.push_back(std::move(l));
    }
    nodes_.clear();
}

void proxy_listener::brokers_changed(const std::map<std::int32_t, upstream_broker>& brokers) {
    std::lock_guard lock(mu_);
    if (stopped_ || to_.sni) {
        return;
    }
    brokers_ = brokers;
    for (auto it = unbound_.begin(); it != unbound_.end();) {
        it = brokers.count(it->first) != 0 ? std::next(it) : unbound_.erase(it);
    }
    for (auto it = nodes_.begin(); it != nodes_.end();) {
        if (brokers.count(it->first) != 0) {
            ++it;
            continue;
        }
        proxy_log().info("upstream broker {} gone: port {} closed", it->first,
                         to_.port_of(it->first));
        it->second->stop();
        retired_.push_back(std::move(it->second));
        it = nodes_.erase(it);
    }
    for (const auto& [id, b] : brokers) {
        if (nodes_.count(id) != 0) {
            continue;
        }
        const std::int32_t port = to_.port_of(id);
        if (id < 0 || port <= 0 || port > 65535) {
            proxy_log().error("upstream broker {}: port {} + {} is not a port; not served",
                              id, to_.port_base, id);
            continue;
        }
        try {
            auto l = std::make_unique<tcp_listener>(
                pool_, tracker_, metrics_, proxy_listener_options("kafka_node"),
                endpoint{bind_host_, static_cast<std::uint16_t>(port)},
                [this, node = id](tcp::socket socket, std::uint64_t conn) {
                    return open(std::move(socket), conn, node);
                });
            l->start();
            proxy_log().info("upstream broker {} served on {}:{}", id, to_.host, port);
            nodes_.emplace(id, std::move(l));
            unbound_.erase(id);
        } catch (const std::exception& e) {
            if (unbound_.emplace(id, port).second) {
                proxy_log().error("upstream broker {}: cannot serve it on port {}: {}; trying "
                                  "again",
                                  id, port, e.what());
            } else {
                proxy_log().debug("upstream broker {}: port {} still cannot be bound: {}", id,
                                  port, e.what());
            }
        }
    }
    if (unbound_.empty()) {
        retry_wait_ = std::chrono::milliseconds(0);
    } else {
        retry_unbound();
    }
}

void proxy_listener::retry_unbound() {
    if (retry_armed_) {
        return;
    }
    retry_armed_ = true;
    retry_wait_ = retry_wait_.count() == 0
                      ? std::chrono::milliseconds(1000)
                      : std::min(retry_wait_ * 2, std::chrono::milliseconds(16000));
    retry_timer_.expires_after(retry_wait_);
    retry_timer_.async_wait([this](const boost::system::error_code& ec) {
        std::map<std::int32_t, upstream_broker> brokers;
        {
            std::lock_guard lock(mu_);
            retry_armed_ = false;
            if (ec || stopped_) {
                return;
            }
            brokers = brokers_;
        }
        brokers_changed(brokers);
    });
}

connection_session proxy_listener::open(tcp::socket socket, std::uint64_t id,
                                        std::optional<std::int32_t> node) {
    auto conn = std::make_shared<proxy_connection>(std::move(socket), svc_, id, node, to_, sasl_,
                                                   tls_ ? tls_->current() : nullptr);
    return connection_session{conn->run(), [conn](stop_mode mode) {
                                  if (mode == stop_mode::finish) {
                                      conn->stop();
                                  } else {
                                      conn->cut();
                                  }
                              }};
}

}  // namespace sluice::gateway::proxy
