// The upstream brokers' log sizes (gateway/proxy/upstream_log_dirs): what a DescribeLogDirs
// answer says, and a broker that never answers or refuses the connection ending its exchange
// by the deadline with the reason.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/proxy/upstream_log_dirs.h"
#include "tests/gateway/coroutine_support.h"

namespace sluice::gateway::proxy {
namespace {

namespace asio = boost::asio;
namespace kafka = protocol::kafka;
using response = kafka::describe_log_dirs_response;
using testing::run_until_done;

response::describe_log_dirs_partition part(std::int32_t p, std::int64_t size, bool future = false) {
    response::describe_log_dirs_partition out;
    out.partition_index = partition_id(p);
    out.partition_size = size;
    out.is_future_key = future;
    return out;
}

response::describe_log_dirs_result dir(std::string path, kafka::error_code error,
                                       std::vector<response::describe_log_dirs_topic> topics) {
    response::describe_log_dirs_result out;
    out.log_dir = std::move(path);
    out.error_code = error;
    out.topics = std::move(topics);
    return out;
}

TEST(UpstreamLogDirs, SumsAReplicaOverDirsAndLeavesOutFutureReplicasAndOfflineDirs) {
    response resp;
    resp.results.push_back(dir("/a", kafka::error_code::none,
                               {{"orders", {part(0, 100), part(1, 7)}, {}}}));
    // A replica being moved into /b (future: not counted), and one partly in /b already.
    resp.results.push_back(dir("/b", kafka::error_code::none,
                               {{"orders", {part(0, 50, true), part(2, 30)}, {}},
                                {"audit", {part(0, 5)}, {}}}));
    resp.results.push_back(dir("/c", kafka::error_code::kafka_storage_error,
                               {{"orders", {part(3, 999)}, {}}}));
    const auto got = log_sizes_of(4, resp, 4);
    EXPECT_EQ(got.node_id, 4);
    EXPECT_TRUE(got.error.empty()) << got.error;
    ASSERT_EQ(got.replicas.size(), 4u);
    EXPECT_EQ(got.replicas[0].topic, "audit");
    EXPECT_EQ(got.replicas[0].size_bytes, 5);
    EXPECT_EQ(got.replicas[1].topic, "orders");
    EXPECT_EQ(got.replicas[1].partition, 0);
    EXPECT_EQ(got.replicas[1].size_bytes, 100);
    EXPECT_EQ(got.replicas[2].partition, 1);
    EXPECT_EQ(got.replicas[3].partition, 2);
    EXPECT_EQ(got.replicas[3].size_bytes, 30);
}

TEST(UpstreamLogDirs, ARefusalIsTheWholeAnswersErrorFromV3) {
    response resp;
    resp.error_code = kafka::error_code::cluster_authorization_failed;
    const auto got = log_sizes_of(1, resp, 3);
    EXPECT_EQ(got.error, "DescribeLogDirs: CLUSTER_AUTHORIZATION_FAILED");
    EXPECT_TRUE(got.replicas.empty());
}

/// A "broker" that accepts connections and never answers.
asio::awaitable<void> silent_broker(std::shared_ptr<asio::ip::tcp::acceptor> acceptor,
                                    std::shared_ptr<std::optional<asio::ip::tcp::socket>> held) {
    held->emplace(co_await acceptor->async_accept(asio::use_awaitable));
}

asio::awaitable<void> ask_a_silent_and_a_closed_broker(std::vector<broker_log_sizes>& out) {
    auto ex = co_await asio::this_coro::executor;
    const auto loopback = asio::ip::make_address("127.0.0.1");
    auto acceptor = std::make_shared<asio::ip::tcp::acceptor>(
        ex, asio::ip::tcp::endpoint(loopback, 0));
    auto held = std::make_shared<std::optional<asio::ip::tcp::socket>>();
    asio::co_spawn(ex, silent_broker(acceptor, held), asio::detached);
    // A port nobody listens on: bound, then closed.
    asio::ip::tcp::acceptor gone(ex, asio::ip::tcp::endpoint(loopback, 0));
    const int closed_port = gone.local_endpoint().port();
    gone.close();

    std::vector<upstream_broker> brokers;
    brokers.push_back({1, "127.0.0.1", acceptor->local_endpoint().port(), std::nullopt});
    brokers.push_back({2, "127.0.0.1", closed_port, std::nullopt});
    // g++ 12: no temporary with a destructor in the co_await expression; named arguments.
    upstream_login no_login;
    std::shared_ptr<auth::tls_client_context> no_tls;
    out = co_await read_upstream_log_dirs(std::move(brokers), no_login, no_tls,
                                          std::chrono::milliseconds(300));
    acceptor->close();
    if (*held) {
        (*held)->close();
    }
}

TEST(UpstreamLogDirs, ABrokerThatNeverAnswersOrRefusesEndsWithTheReason) {
    std::vector<broker_log_sizes> got;
    run_until_done(ask_a_silent_and_a_closed_broker(got));  // ends: every exchange bounded
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].node_id, 1);
    EXPECT_NE(got[0].error.find("ApiVersions: no answer within 300 ms"), std::string::npos)
        << got[0].error;
    EXPECT_EQ(got[1].node_id, 2);
    EXPECT_NE(got[1].error.find("connect: "), std::string::npos) << got[1].error;
    EXPECT_TRUE(got[0].replicas.empty() && got[1].replicas.empty());
}

}  // namespace
}  // namespace sluice::gateway::proxy
