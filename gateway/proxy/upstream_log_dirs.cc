#include "gateway/proxy/upstream_log_dirs.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/proxy/upstream_exchange.h"
#include "gateway/proxy/upstream_stream.h"
#include "protocol/kafka/error_code.h"
#include "protocol/kafka/messages/api_versions.h"

namespace sluice::gateway::proxy {
namespace asio = boost::asio;
namespace kafka = protocol::kafka;

namespace {

/// Closes `s` when `t` fires (the deadline of one broker's exchange); cancelling `t` disarms it.
asio::awaitable<void> close_at_deadline(std::shared_ptr<asio::steady_timer> t,
                                        std::shared_ptr<upstream_stream> s) {
    boost::system::error_code ec;
    co_await t->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (!ec) {
        s->close();
    }
}

/// What every broker's task fills in; the last one to finish wakes the waiter.
struct gathering {
    explicit gathering(const asio::any_io_executor& ex, std::size_t n) : done(ex), left(n) {
        answers.resize(n);
    }
    asio::steady_timer done;
    std::size_t left;
    std::vector<std::optional<broker_log_sizes>> answers;
};

struct ask_options {
    upstream_login login;
    std::shared_ptr<auth::tls_client_context> tls;
    std::chrono::milliseconds timeout;
};

/// One broker: connect, ApiVersions (is DescribeLogDirs offered, at which version), the
/// login, DescribeLogDirs for every topic; the reason as `error` when a step fails.
asio::awaitable<broker_log_sizes> ask_broker(upstream_broker b,
                                            std::shared_ptr<const ask_options> o) {
    const ask_options& opts = *o;  // kept by `o` for the whole exchange
    broker_log_sizes out;
    out.node_id = b.node_id;
    auto ex = co_await asio::this_coro::executor;
    auto socket = std::make_shared<upstream_stream>(ex);
    auto deadline = std::make_shared<asio::steady_timer>(ex, opts.timeout);
    asio::co_spawn(ex, close_at_deadline(deadline, socket), asio::detached);
    struct disarm {
        std::shared_ptr<asio::steady_timer> t;
        ~disarm() { t->cancel(); }
    } disarm_deadline{deadline};
    const std::string at = b.host + ":" + std::to_string(b.port);
    // A step that failed because the deadline closed the socket says so.
    const auto failed = [&](std::string_view step, const std::string& why) {
        const bool late = deadline->expiry() <= asio::steady_timer::clock_type::now();
        out.error = at + ": " + std::string(step) + ": " +
                    (late ? "no answer within " + std::to_string(opts.timeout.count()) + " ms"
                          : why);
    };
    std::string why;
    if (!co_await socket->open(b.host, b.port, opts.tls, why)) {
        failed("connect", why);
        co_return out;
    }
    // g++ 12: no temporary with a destructor inside a co_await expression; named requests.
    const kafka::api_versions_request versions_req;
    const auto versions = co_await upstream_exchange<kafka::api_versions_response>(
        *socket, versions_req, 0, 1, why);
    if (!versions) {
        failed("ApiVersions", why);
        co_return out;
    }
    std::int16_t version = -1;
    for (const auto& a : versions->api_keys) {
        if (a.api_key == kafka::api_key::describe_log_dirs &&
            a.min_version <= kafka::describe_log_dirs_request::max_version) {
            version = std::min(a.max_version, kafka::describe_log_dirs_request::max_version);
        }
    }
    if (version < 0) {
        out.error = at + ": the broker does not offer DescribeLogDirs";
        co_return out;
    }
    if (opts.login.enabled() && !co_await log_in_upstream(*socket, opts.login, why)) {
        failed("login", why);
        co_return out;
    }
    kafka::describe_log_dirs_request req;
    req.topics.reset();  // null: every partition
    const auto resp = co_await upstream_exchange<kafka::describe_log_dirs_response>(
        *socket, req, version, 2, why);
    if (!resp) {
        failed("DescribeLogDirs", why);
        co_return out;
    }
    socket->close();
    auto sizes = log_sizes_of(b.node_id, *resp, version);
    if (!sizes.error.empty()) {
        sizes.error = at + ": " + sizes.error;
    }
    co_return sizes;
}

asio::awaitable<void> ask_into(std::shared_ptr<gathering> g, std::size_t i, upstream_broker b,
                               std::shared_ptr<const ask_options> opts) {
    auto answer = co_await ask_broker(std::move(b), std::move(opts));
    g->answers[i] = std::move(answer);
    if (--g->left == 0) {
        g->done.cancel();
    }
}

/// Runs on a strand of its own: the tasks and the waiter share `gathering` without a lock.
asio::awaitable<std::vector<broker_log_sizes>> gather(std::vector<upstream_broker> brokers,
                                                      std::shared_ptr<const ask_options> opts) {
    auto ex = co_await asio::this_coro::executor;
    auto g = std::make_shared<gathering>(ex, brokers.size());
    for (std::size_t i = 0; i < brokers.size(); ++i) {
        asio::co_spawn(ex, ask_into(g, i, brokers[i], opts), asio::detached);
    }
    if (g->left > 0) {
        // Each task ends by its own deadline; this one is the backstop (a name that does not
        // resolve is not cut by closing the socket).
        g->done.expires_after(opts->timeout + std::chrono::seconds(1));
        boost::system::error_code ec;
        co_await g->done.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    std::vector<broker_log_sizes> out;
    out.reserve(brokers.size());
    for (std::size_t i = 0; i < brokers.size(); ++i) {
        if (g->answers[i]) {
            out.push_back(std::move(*g->answers[i]));
            continue;
        }
        auto& late = out.emplace_back();
        late.node_id = brokers[i].node_id;
        late.error = brokers[i].host + ":" + std::to_string(brokers[i].port) +
                     ": no answer within " + std::to_string(opts->timeout.count()) + " ms";
    }
    co_return out;
}

}  // namespace

broker_log_sizes log_sizes_of(std::int32_t node_id,
                              const kafka::describe_log_dirs_response& resp,
                              std::int16_t version) {
    broker_log_sizes out;
    out.node_id = node_id;
    if (version >= 3 && resp.error_code != kafka::error_code::none) {
        out.error = "DescribeLogDirs: " + std::string(kafka::error_name(resp.error_code));
        return out;
    }
    std::map<std::pair<std::string, std::int32_t>, std::int64_t> sizes;
    for (const auto& dir : resp.results) {
        if (dir.error_code != kafka::error_code::none) {
            continue;  // an offline dir: its replicas are not there to measure
        }
        for (const auto& t : dir.topics) {
            for (const auto& p : t.partitions) {
                if (!p.is_future_key) {
                    sizes[{t.name, p.partition_index.value}] += p.partition_size;
                }
            }
        }
    }
    out.replicas.reserve(sizes.size());
    for (const auto& [tp, size] : sizes) {
        out.replicas.push_back({tp.first, tp.second, size});
    }
    return out;
}

asio::awaitable<std::vector<broker_log_sizes>> read_upstream_log_dirs(
    std::vector<upstream_broker> brokers, upstream_login login,
    std::shared_ptr<auth::tls_client_context> tls, std::chrono::milliseconds timeout) {
    auto opts = std::make_shared<const ask_options>(
        ask_options{std::move(login), std::move(tls), timeout});
    auto strand = asio::make_strand(co_await asio::this_coro::executor);
    co_return co_await asio::co_spawn(strand, gather(std::move(brokers), std::move(opts)),
                                      asio::use_awaitable);
}

}  // namespace sluice::gateway::proxy
