#include "gateway/server/upstream_log_dirs.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "gateway/proxy/upstream_log_dirs.h"
#include "gateway/proxy/upstream_login.h"

namespace sluice::gateway {
namespace api = backend::api;

namespace {

/// How long an answer is reused: the console refreshes every 2 s, and a log's size is not
/// worth a DescribeLogDirs to every broker that often.
constexpr auto keep_answer = std::chrono::seconds(5);

/// The longest one broker's exchange may take: the console's topic pages wait for the sizes,
/// so a broker that does not answer costs them this at most (upstream.request.timeout.ms
/// when shorter).
constexpr auto longest_exchange = std::chrono::milliseconds(5000);

class upstream_log_dirs_reader final : public api::log_dirs_reader {
  public:
    upstream_log_dirs_reader(proxy::upstream_login login,
                             std::shared_ptr<auth::tls_client_context> tls,
                             std::chrono::milliseconds timeout, std::string cannot)
        : login_(std::move(login)),
          tls_(std::move(tls)),
          timeout_(timeout),
          cannot_(std::move(cannot)) {}

    api::awaitable<api::log_sizes> read(std::vector<api::broker_info> brokers) override {
        std::vector<std::int32_t> nodes;
        for (const auto& b : brokers) {
            nodes.push_back(b.node_id);
        }
        {
            std::lock_guard lock(mu_);
            if (kept_ && kept_nodes_ == nodes && clock::now() < kept_until_) {
                co_return *kept_;
            }
        }
        auto out = co_await ask(std::move(brokers));
        std::lock_guard lock(mu_);
        kept_ = out;
        kept_nodes_ = std::move(nodes);
        kept_until_ = clock::now() + keep_answer;
        co_return out;
    }

  private:
    using clock = std::chrono::steady_clock;

    api::awaitable<api::log_sizes> ask(std::vector<api::broker_info> brokers) {
        api::log_sizes out;
        if (!cannot_.empty()) {
            for (const auto& b : brokers) {
                out.failures.push_back({b.node_id, cannot_});
            }
            co_return out;
        }
        std::vector<proxy::upstream_broker> asked;
        asked.reserve(brokers.size());
        for (const auto& b : brokers) {
            asked.push_back({b.node_id, b.host, b.port, b.rack});
        }
        auto answers = co_await proxy::read_upstream_log_dirs(std::move(asked), login_, tls_,
                                                               timeout_);
        for (auto& a : answers) {
            if (!a.error.empty()) {
                out.failures.push_back({a.node_id, std::move(a.error)});
                continue;
            }
            for (auto& r : a.replicas) {
                out.replicas.push_back(
                    {topic_name(std::move(r.topic)), partition_id(r.partition), a.node_id,
                     r.size_bytes});
            }
        }
        std::sort(out.replicas.begin(), out.replicas.end(), [](const auto& x, const auto& y) {
            return std::tie(x.topic.value, x.partition.value, x.node_id) <
                   std::tie(y.topic.value, y.partition.value, y.node_id);
        });
        std::sort(out.failures.begin(), out.failures.end(),
                  [](const auto& x, const auto& y) { return x.node_id < y.node_id; });
        co_return out;
    }

    const proxy::upstream_login login_;
    const std::shared_ptr<auth::tls_client_context> tls_;
    const std::chrono::milliseconds timeout_;
    const std::string cannot_;  // non-empty: why no broker can be asked
    std::mutex mu_;
    std::optional<api::log_sizes> kept_;     // the last answer (guarded by mu_)
    std::vector<std::int32_t> kept_nodes_;    // the brokers it asked (guarded by mu_)
    clock::time_point kept_until_;            // (guarded by mu_)
};

}  // namespace

std::shared_ptr<api::log_dirs_reader> make_upstream_log_dirs_reader(
    const upstream_settings& upstream) {
    proxy::upstream_login login;
    std::shared_ptr<auth::tls_client_context> tls;
    std::string cannot;
    try {
        login = proxy::read_upstream_login(upstream.properties);
        tls = proxy::read_upstream_tls(upstream.properties);
    } catch (const std::invalid_argument& e) {
        cannot = std::string("the gateway's own broker connections cannot be opened: ") +
                 e.what();
    }
    return std::make_shared<upstream_log_dirs_reader>(std::move(login), std::move(tls),
                                                      std::min(upstream.request_timeout,
                                                               longest_exchange),
                                                      std::move(cannot));
}

}  // namespace sluice::gateway
