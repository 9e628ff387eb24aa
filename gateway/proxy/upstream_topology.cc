#include "gateway/proxy/upstream_topology.h"

#include <iterator>
#include <stdexcept>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "gateway/proxy/logger.h"
#include "gateway/proxy/upstream_exchange.h"
#include "gateway/proxy/upstream_login.h"
#include "gateway/proxy/upstream_stream.h"
#include "protocol/kafka/api_table.h"
#include "protocol/kafka/header.h"
#include "protocol/kafka/messages/api_versions.h"
#include "protocol/kafka/messages/metadata.h"

namespace sluice::gateway::proxy {
namespace asio = boost::asio;
namespace kafka = protocol::kafka;
using asio::ip::tcp;

namespace {

/// Waits between failed refreshes: doubling from the first to the refresh interval.
constexpr auto topology_first_retry = std::chrono::milliseconds(250);

/// Closes `s` when `t` fires (the deadline of one exchange); cancelling `t` disarms it.
asio::awaitable<void> topology_deadline(std::shared_ptr<asio::steady_timer> t,
                                        std::shared_ptr<upstream_stream> s) {
    boost::system::error_code ec;
    co_await t->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
        s->close();
    }
}

}  // namespace

std::vector<upstream_address> parse_bootstrap_servers(const std::string& servers) {
    std::vector<upstream_address> out;
    std::size_t from = 0;
    while (from <= servers.size()) {
        const std::size_t comma = std::min(servers.find(',', from), servers.size());
        std::string one = servers.substr(from, comma - from);
        from = comma + 1;
        if (one.empty()) {
            continue;
        }
        // PLAINTEXT://host:port as Kafka's bootstrap.servers allows.
        if (const auto scheme = one.find("://"); scheme != std::string::npos) {
            one = one.substr(scheme + 3);
        }
        const auto colon = one.rfind(':');
        int port = 0;
        try {
            port = colon == std::string::npos ? 0 : std::stoi(one.substr(colon + 1));
        } catch (const std::exception&) {
            port = 0;
        }
        if (colon == std::string::npos || colon == 0 || port <= 0 || port > 65535) {
            throw std::invalid_argument("upstream.bootstrap.servers: '" + one +
                                        "' is not HOST:PORT");
        }
        std::string host = one.substr(0, colon);
        if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
            host = host.substr(1, host.size() - 2);
        }
        out.push_back({std::move(host), port});
    }
    if (out.empty()) {
        throw std::invalid_argument("upstream.bootstrap.servers: no HOST:PORT");
    }
    return out;
}

upstream_topology::upstream_topology(std::vector<upstream_address> bootstrap,
                                     std::chrono::milliseconds refresh,
                                     std::chrono::milliseconds request_timeout,
                                     upstream_login login,
                                     std::shared_ptr<auth::tls_client_context> tls)
    : bootstrap_(std::move(bootstrap)),
      refresh_(refresh),
      request_timeout_(request_timeout),
      login_(std::move(login)),
      tls_(std::move(tls)) {}

std::vector<std::pair<std::int16_t, version_range>> upstream_topology::upstream_versions() const {
    std::lock_guard lock(mu_);
    return versions_;
}

void upstream_topology::start(asio::any_io_executor ex) {
    executor_ = ex;
    timer_ = std::make_unique<asio::steady_timer>(ex);
    asio::co_spawn(ex, refresh_loop(), asio::detached);
}

void upstream_topology::stop() {
    stopping_.store(true);
    if (executor_) {
        asio::post(*executor_, [this] { timer_->cancel(); });
    }
}

void upstream_topology::observe(const std::vector<upstream_broker>& brokers) {
    std::map<std::int32_t, upstream_broker> next;
    for (const auto& b : brokers) {
        next[b.node_id] = b;
    }
    {
        std::lock_guard lock(mu_);
        if (next == brokers_ || next.empty()) {
            return;
        }
        for (const auto& [id, b] : next) {
            const auto was = brokers_.find(id);
            if (was == brokers_.end()) {
                proxy_log().info("upstream broker {} joined ({}:{})", id, b.host, b.port);
            } else if (was->second.host != b.host || was->second.port != b.port) {
                proxy_log().info("upstream broker {} moved to {}:{}", id, b.host, b.port);
            }
        }
        for (const auto& [id, b] : brokers_) {
            if (next.count(id) == 0) {
                proxy_log().info("upstream broker {} left ({}:{})", id, b.host, b.port);
            }
        }
        brokers_ = std::move(next);
    }
    if (executor_) {
        asio::post(*executor_, [this] { notify(); });
    }
}

void upstream_topology::notify() {
    const auto now = brokers();
    for (const auto& s : subscribers_) {
        s(now);
    }
}

std::optional<upstream_address> upstream_topology::address_of(std::int32_t node_id) const {
    std::lock_guard lock(mu_);
    const auto it = brokers_.find(node_id);
    if (it == brokers_.end()) {
        return std::nullopt;
    }
    return upstream_address{it->second.host, it->second.port};
}

upstream_address upstream_topology::pick() {
    std::lock_guard lock(mu_);
    const std::size_t n = next_pick_++;
    if (brokers_.empty()) {
        return bootstrap_[n % bootstrap_.size()];
    }
    auto it = brokers_.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(n % brokers_.size()));
    return {it->second.host, it->second.port};
}

std::map<std::int32_t, upstream_broker> upstream_topology::brokers() const {
    std::lock_guard lock(mu_);
    return brokers_;
}

asio::awaitable<void> upstream_topology::refresh_loop() {
    auto wait = topology_first_retry;
    bool failing = false;
    std::size_t attempt = 0;
    while (!stopping_.load()) {
        // Known brokers first, then the bootstrap list.
        std::vector<upstream_address> order;
        for (const auto& [id, b] : brokers()) {
            order.push_back({b.host, b.port});
        }
        order.insert(order.end(), bootstrap_.begin(), bootstrap_.end());
        std::string why;
        std::optional<std::vector<upstream_broker>> got;
        for (std::size_t i = 0; i < order.size() && !got && !stopping_.load(); ++i) {
            const upstream_address at = order[(attempt + i) % order.size()];
            got = co_await ask(at, why);
        }
        ++attempt;
        if (got) {
            if (failing) {
                proxy_log().info("upstream metadata reachable again");
            }
            failing = false;
            observe(*got);
            // Also unchanged: a node port that could not be bound is tried again.
            notify();
            wait = std::chrono::duration_cast<std::chrono::milliseconds>(refresh_);
        } else if (!stopping_.load()) {
            if (!failing) {
                proxy_log().warn("upstream metadata unavailable ({}); retrying", why);
            }
            failing = true;
            wait = std::min(std::chrono::milliseconds(wait * 2), refresh_);
        }
        boost::system::error_code ec;
        timer_->expires_after(failing ? wait : refresh_);
        co_await timer_->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

asio::awaitable<std::optional<std::vector<upstream_broker>>> upstream_topology::ask(
    upstream_address at, std::string& why) {
    auto ex = co_await asio::this_coro::executor;
    auto socket = std::make_shared<upstream_stream>(ex);
    auto deadline = std::make_shared<asio::steady_timer>(ex, request_timeout_);
    asio::co_spawn(ex, topology_deadline(deadline, socket), asio::detached);
    struct disarm {
        std::shared_ptr<asio::steady_timer> t;
        ~disarm() { t->cancel(); }
    } disarm_deadline{deadline};

    // TCP, and TLS with upstream.security.protocol SSL / SASL_SSL.
    if (!co_await socket->open(at.host, at.port, tls_, why)) {
        co_return std::nullopt;
    }
    // g++ 12: no temporary with a destructor inside a co_await expression (it may be
    // destroyed twice); the requests are named locals.
    // ApiVersions v0 first: every broker answers it, and it says which Metadata to send.
    const kafka::api_versions_request versions_req;
    const auto versions = co_await upstream_exchange<kafka::api_versions_response>(
        *socket, versions_req, 0, 1, why);
    if (!versions) {
        // (With TLS 1.3 a broker refusing the gateway's certificate says so here.)
        why = at.host + ":" + std::to_string(at.port) + ": ApiVersions: " + why;
        co_return std::nullopt;
    }
    std::int16_t metadata_version = -1;
    std::vector<std::pair<std::int16_t, version_range>> offered;
    for (const auto& a : versions->api_keys) {
        offered.emplace_back(static_cast<std::int16_t>(a.api_key),
                             version_range{a.min_version, a.max_version});
        if (a.api_key == kafka::api_key::metadata) {
            metadata_version = std::min(a.max_version, kafka::metadata_request::max_version);
        }
    }
    if (login_.enabled() && !co_await log_in_upstream(*socket, login_, why)) {
        why = at.host + ":" + std::to_string(at.port) + ": login failed: " + why;
        co_return std::nullopt;
    }
    {
        std::lock_guard lock(mu_);
        versions_ = std::move(offered);
    }
    if (metadata_version < 1) {
        why = "the upstream offers no Metadata v1 or later";
        co_return std::nullopt;
    }
    kafka::metadata_request req;
    req.topics.emplace();  // an empty list: brokers only (v1+)
    req.allow_auto_topic_creation = false;
    const auto md = co_await upstream_exchange<kafka::metadata_response>(
        *socket, req, metadata_version, 9, why);
    if (!md) {
        co_return std::nullopt;
    }
    std::vector<upstream_broker> out;
    for (const auto& b : md->brokers) {
        out.push_back({b.node_id.value, b.host, b.port, b.rack});
    }
    socket->close();
    co_return out;
}

}  // namespace sluice::gateway::proxy
