// backend/upstream's client level as a whole: properties librdkafka refuses, health against a
// live and an unreachable cluster, librdkafka's statistics (the producer's and the consumers').
#include <chrono>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include <boost/asio/ip/tcp.hpp>

#include "backend/upstream/upstream_monitor.h"
#include "tests/backend/upstream/upstream_support.h"

namespace sluice::backend::upstream::test {
namespace {

using namespace std::chrono_literals;

using UpstreamClient = UpstreamTest;

/// A local port nothing listens on (bound, then closed).
std::string closed_port_address() {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor acceptor(
        io, boost::asio::ip::tcp::endpoint(boost::asio::ip::address_v4::loopback(), 0));
    const auto port = acceptor.local_endpoint().port();
    acceptor.close();
    return "127.0.0.1:" + std::to_string(port);
}

TEST(UpstreamClientOptions, ARefusedPropertyThrowsWithItsName) {
    upstream_options opts;
    opts.properties = {{"bootstrap.servers", "127.0.0.1:9"}, {"no.such.property", "1"}};
    try {
        make_upstream_client(opts);
        FAIL() << "no exception";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("upstream.no.such.property"), std::string::npos)
            << e.what();
    }
}

TEST(UpstreamClientOptions, ARefusedValueThrowsWithItsName) {
    upstream_options opts;
    opts.properties = {{"bootstrap.servers", "127.0.0.1:9"}, {"acks", "sometimes"}};
    EXPECT_THROW(make_upstream_client(opts), std::invalid_argument);
}

TEST_F(UpstreamClient, ReadyOnceTheClusterAnswers) {
    auto& client = open();
    EXPECT_TRUE(run_until([&] { return client.check().ready; })) << client.check().reason;
}

TEST_F(UpstreamClient, AnUnreachableBootstrapIsNotReadyAndSendsFailInTime) {
    upstream_options opts;
    const auto address = closed_port_address();
    opts.properties = {{"bootstrap.servers", address}};
    opts.request_timeout = 1500ms;
    client_ = make_upstream_client(opts);
    auto& client = *client_;

    EXPECT_FALSE(client.check().ready);
    // librdkafka reports the refused connection through its error callback.
    EXPECT_TRUE(
        run_until([&] { return client.check().reason.find("refused") != std::string::npos; }, 10s))
        << client.check().reason;
    auto h = client.check();
    EXPECT_FALSE(h.ready);
    EXPECT_NE(h.reason.find(address), std::string::npos) << h.reason;

    api::outgoing_record r;
    r.value = "v";
    api::send_options send_opts;
    send_opts.timeout = 1s;
    const auto start = std::chrono::steady_clock::now();
    auto sent = run(client.producer().send(topic_name("anything"), {r}, send_opts));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
    ASSERT_FALSE(sent);
    const auto why = sent.error().reason();
    EXPECT_TRUE(why == api::errc::backend_unavailable || why == api::errc::request_timed_out)
        << sent.error().text();

    auto cluster_info = run(client.admin().describe_cluster());
    ASSERT_FALSE(cluster_info);
    EXPECT_GE(client.statistics().errors.size(), 1u);
}

TEST_F(UpstreamClient, StatisticsShowEveryBroker) {
    auto& client = open({{"statistics.interval.ms", "100"}});
    // The brokers are connected once something was asked of them.
    ASSERT_TRUE(run(client.admin().describe_cluster()));
    const bool three = run_until([&] {
        auto s = client.statistics();
        if (s.handles.empty()) {
            return false;
        }
        // librdkafka connects to a broker when it needs one: the others may still be INIT.
        int known = 0;
        int up = 0;
        for (const auto& b : s.handles[0].brokers) {
            known += b.node_id >= 1 && b.node_id <= 3;
            up += b.state == "UP";
        }
        return known == 3 && up >= 1;
    });
    auto s = client.statistics();
    std::string seen;
    for (const auto& h : s.handles) {
        for (const auto& b : h.brokers) {
            seen += h.name + ":" + b.name + "/" + std::to_string(b.node_id) + "=" + b.state + " ";
        }
    }
    ASSERT_TRUE(three) << seen;
    ASSERT_EQ(s.handles.size(), 1u);
    EXPECT_EQ(s.handles[0].name, "producer");
    for (const auto& b : s.handles[0].brokers) {
        EXPECT_NE(b.name.find("127.0.0.1:"), std::string::npos);
        if (b.state == "UP") {
            EXPECT_GT(b.requests_sent, 0);
        }
    }
}

/// The "consumers" handle of `s`, or null.
const api::client::stats::handle* consumers_handle(const api::client::stats& s) {
    for (const auto& h : s.handles) {
        if (h.name == "consumers") {
            return &h;
        }
    }
    return nullptr;
}

std::int64_t requests_of(const api::client::stats::handle& h) {
    std::int64_t n = 0;
    for (const auto& b : h.brokers) {
        n += b.requests_sent;
    }
    return n;
}

TEST_F(UpstreamClient, StatisticsCountTheConsumersAndKeepTheirCountsAfterAClose) {
    auto& client = open({{"statistics.interval.ms", "100"}});
    const auto t = unique_name("stats");
    ASSERT_TRUE(cluster().create_topic(t, 1));
    api::consumer_options o;
    o.reset = api::offset_reset::earliest;
    auto c = client.open_consumer(o, io_->get_executor());
    c->assign({api::topic_partition{topic_name(t), partition_id(0)}});

    std::int64_t sent = 0;
    const bool reported = run_until([&] {
        auto s = client.statistics();
        const auto* h = consumers_handle(s);
        if (!h) {
            return false;
        }
        sent = requests_of(*h);
        bool up = false;
        for (const auto& b : h->brokers) {
            up = up || (b.state == "UP" && b.node_id >= 1 && b.node_id <= 3);
        }
        return up && sent > 0;
    });
    ASSERT_TRUE(reported) << "no consumer statistics with a broker UP";
    auto before = client.statistics();
    ASSERT_EQ(before.handles.size(), 2u);  // the producer's and the consumers'
    EXPECT_EQ(before.handles[0].name, "producer");

    c->close(true);
    ASSERT_TRUE(run_until([&] { return c->closed(); }));
    auto after = client.statistics();
    const auto* h = consumers_handle(after);
    ASSERT_NE(h, nullptr);
    EXPECT_GE(requests_of(*h), sent);  // a closed consumer's requests still count
    for (const auto& b : h->brokers) {
        EXPECT_NE(b.state, "UP") << b.name;  // no live consumer holds a connection
    }
}

TEST(UpstreamStatistics, ConsumersAddUpPerBrokerAndClosedOnesStayCounted) {
    auto doc = [](int tx, const char* state, int rtt) {
        return "{\"msg_cnt\":1,\"brokers\":{\"b:1/1\":{\"name\":\"b:1/1\",\"nodeid\":1,"
               "\"state\":\"" + std::string(state) + "\",\"source\":\"learned\",\"tx\":" +
               std::to_string(tx) + ",\"txerrs\":1,\"rtt\":{\"avg\":" + std::to_string(rtt) +
               ",\"p99\":" + std::to_string(rtt) + "}}}}";
    };
    consumer_statistics stats;
    EXPECT_FALSE(stats.merged());
    const auto a = stats.add();
    const auto b = stats.add();
    stats.on_statistics(a, doc(10, "UP", 100));
    stats.on_statistics(b, doc(5, "DOWN", 300));

    auto both = stats.merged();
    ASSERT_TRUE(both);
    EXPECT_EQ(both->name, "consumers");
    EXPECT_EQ(both->queued_messages, 2);
    ASSERT_EQ(both->brokers.size(), 1u);
    EXPECT_EQ(both->brokers[0].requests_sent, 15);
    EXPECT_EQ(both->brokers[0].request_errors, 2);
    EXPECT_EQ(both->brokers[0].state, "UP");
    EXPECT_EQ(both->brokers[0].rtt_avg_us, 300);

    stats.closed(a);
    stats.closed(a);  // idempotent
    stats.on_statistics(b, doc(7, "UP", 200));
    auto one = stats.merged();
    ASSERT_TRUE(one);
    ASSERT_EQ(one->brokers.size(), 1u);
    EXPECT_EQ(one->brokers[0].requests_sent, 17);  // a's last 10 and b's 7
    EXPECT_EQ(one->brokers[0].rtt_avg_us, 200);

    stats.closed(b);
    auto none = stats.merged();
    ASSERT_TRUE(none);
    ASSERT_EQ(none->brokers.size(), 1u);
    EXPECT_EQ(none->brokers[0].requests_sent, 17);
    EXPECT_EQ(none->brokers[0].state, "INIT");
    EXPECT_EQ(none->queued_messages, 0);
}

TEST(UpstreamStatistics, ParsesLibrdkafkasDocument) {
    const std::string json = R"({"name":"rdkafka#producer-1","msg_cnt":7,"brokers":{
        "127.0.0.1:1/1":{"name":"127.0.0.1:1/1","nodeid":1,"state":"UP","source":"learned",
            "tx":10,"txerrs":1,"rxerrs":2,"req_timeouts":3,
            "rtt":{"avg":1500,"p99":4000},"throttle":{"avg":5}},
        ":0/internal":{"name":":0/internal","nodeid":-1,"state":"INIT","source":"internal"}}})";
    auto h = parse_statistics("producer", json);
    EXPECT_EQ(h.name, "producer");
    EXPECT_EQ(h.queued_messages, 7);
    ASSERT_EQ(h.brokers.size(), 1u);
    const auto& b = h.brokers[0];
    EXPECT_EQ(b.node_id, 1);
    EXPECT_EQ(b.state, "UP");
    EXPECT_EQ(b.requests_sent, 10);
    EXPECT_EQ(b.request_errors, 6);
    EXPECT_EQ(b.rtt_avg_us, 1500);
    EXPECT_EQ(b.rtt_p99_us, 4000);
    EXPECT_EQ(b.throttle_avg_ms, 5);
    EXPECT_TRUE(parse_statistics("x", "not json").brokers.empty());
}

}  // namespace
}  // namespace sluice::backend::upstream::test
