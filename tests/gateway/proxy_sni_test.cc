// SNI routing's names (gateway/proxy/sni_host_pattern.h): proxy.sni.host.pattern parsed and
// refused, a node's name and the way back from a TLS server name to the node, and the
// rewritten addresses of Metadata, FindCoordinator, DescribeCluster and the KIP-951
// NodeEndpoints of Produce and Fetch naming each node by the pattern on the listener's one port.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>

#include "gateway/proxy/response_rewrite.h"
#include "gateway/proxy/sni_host_pattern.h"
#include "protocol/kafka/messages/describe_cluster.h"
#include "protocol/kafka/messages/fetch.h"
#include "protocol/kafka/messages/find_coordinator.h"
#include "protocol/kafka/messages/metadata.h"
#include "protocol/kafka/messages/produce.h"

namespace sluice::gateway::proxy {
namespace {
namespace kafka = protocol::kafka;

const sni_host_pattern brokers = sni_host_pattern::parse("broker-$(nodeId).kafka.example.com");

TEST(SniHostPattern, NamesEachNode) {
    EXPECT_EQ(brokers.host_of(0), "broker-0.kafka.example.com");
    EXPECT_EQ(brokers.host_of(12), "broker-12.kafka.example.com");
    EXPECT_EQ(brokers.text(), "broker-$(nodeId).kafka.example.com");
    EXPECT_EQ(sni_host_pattern::parse("$(nodeId).k").host_of(3), "3.k");
    EXPECT_EQ(sni_host_pattern::parse("k-$(nodeId)").host_of(3), "k-3");
}

TEST(SniHostPattern, ServerNameGivesItsNode) {
    EXPECT_EQ(brokers.node_of("broker-0.kafka.example.com"), 0);
    EXPECT_EQ(brokers.node_of("broker-2147483647.kafka.example.com"), 2147483647);
    // DNS names compare without regard to case.
    EXPECT_EQ(brokers.node_of("BROKER-7.Kafka.Example.COM"), 7);
}

TEST(SniHostPattern, OtherNamesGiveNoNode) {
    for (const char* name : {"", "kafka.example.com", "broker-.kafka.example.com",
                             "broker-x.kafka.example.com", "broker-1x.kafka.example.com",
                             "broker--1.kafka.example.com", "broker-01.kafka.example.com",
                             "broker-2147483648.kafka.example.com",
                             "broker-99999999999999999999.kafka.example.com",
                             "broker-1.kafka.example.com.evil", "xbroker-1.kafka.example.com",
                             "broker-1.kafka.example.org", "broker-1"}) {
        EXPECT_FALSE(brokers.node_of(name).has_value()) << name;
    }
}

TEST(SniHostPattern, RoutesTheListenersOwnNameAndNoNameToTheBootstrap) {
    EXPECT_EQ(brokers.route("broker-4.kafka.example.com", "kafka.example.com"), 4);
    EXPECT_FALSE(brokers.route("", "kafka.example.com").has_value());
    EXPECT_FALSE(brokers.route("kafka.example.com", "kafka.example.com").has_value());
    EXPECT_FALSE(brokers.route("other.example.com", "kafka.example.com").has_value());
    // The advertised host wins over the pattern when it matches both (case aside).
    EXPECT_FALSE(
        brokers.route("BROKER-0.kafka.example.com", "broker-0.kafka.example.com").has_value());
    EXPECT_EQ(brokers.route("broker-1.kafka.example.com", "broker-0.kafka.example.com"), 1);
}

TEST(SniHostPattern, RefusesWhatIsNotAHostNameWithOnePlaceholder) {
    for (const char* bad : {"", "broker.kafka.example.com", "$(nodeId)-$(nodeId).k",
                            "broker-$(nodeid).k", "broker_$(nodeId).k", "b $(nodeId).k",
                            "broker-$(nodeId).k:9092", ".$(nodeId).k", "$(nodeId)..k",
                            "$(nodeId).k."}) {
        EXPECT_THROW(sni_host_pattern::parse(bad), std::invalid_argument) << bad;
    }
}

/// The SNI side of a gateway: every node on port 9093 under the pattern.
node_addresses sni_side() {
    node_addresses to{"bootstrap.kafka.example.com", 9093};
    to.sni = brokers;
    return to;
}

template <typename T>
T rewritten_sni(const T& msg, std::int16_t version) {
    protocol::writer w;
    msg.encode(w, version);
    auto body = std::make_shared<protocol::byte_buffer>(w.flatten());
    protocol::writer out;
    auto r = rewrite_response_body(static_cast<std::int16_t>(T::key), version, body->view(), body,
                                   sni_side(), nullptr, out);
    EXPECT_TRUE(r.has_value() && *r) << "v" << version;
    const auto flat = out.flatten();
    protocol::reader rd(flat.view());
    T back;
    back.decode(rd, version);
    EXPECT_TRUE(rd.ok() && rd.remaining() == 0) << "v" << version;
    return back;
}

TEST(SniRewrite, MetadataNamesEachNodeOnTheOnePort) {
    for (std::int16_t v = kafka::metadata_response::min_version;
         v <= kafka::metadata_response::max_version; ++v) {
        kafka::metadata_response m;
        m.brokers.push_back({node_id(1), "10.0.0.1", 9092, std::nullopt, {}});
        m.brokers.push_back({node_id(3), "10.0.0.3", 9092, std::nullopt, {}});
        const auto back = rewritten_sni(m, v);
        ASSERT_EQ(back.brokers.size(), 2u);
        EXPECT_EQ(back.brokers[0].host, "broker-1.kafka.example.com") << "v" << v;
        EXPECT_EQ(back.brokers[0].port, 9093);
        EXPECT_EQ(back.brokers[1].host, "broker-3.kafka.example.com") << "v" << v;
        EXPECT_EQ(back.brokers[1].port, 9093);
    }
}

TEST(SniRewrite, CoordinatorsAndClusterBrokersNamedByThePattern) {
    kafka::find_coordinator_response single;
    single.node_id = node_id(2);
    single.host = "10.0.0.2";
    single.port = 9092;
    const auto one = rewritten_sni(single, 3);
    EXPECT_EQ(one.host, "broker-2.kafka.example.com");
    EXPECT_EQ(one.port, 9093);

    kafka::find_coordinator_response batched;
    batched.coordinators.push_back({"g", node_id(4), "10.0.0.4", 9092, kafka::error_code::none,
                                    std::nullopt, {}});
    batched.coordinators.push_back({"h", node_id(-1), "", -1,
                                    kafka::error_code::coordinator_not_available, std::nullopt,
                                    {}});
    const auto many = rewritten_sni(batched, kafka::find_coordinator_response::max_version);
    ASSERT_EQ(many.coordinators.size(), 2u);
    EXPECT_EQ(many.coordinators[0].host, "broker-4.kafka.example.com");
    EXPECT_EQ(many.coordinators[0].port, 9093);
    EXPECT_EQ(many.coordinators[1].host, "");  // no node: the placeholder stays
    EXPECT_EQ(many.coordinators[1].port, -1);

    kafka::describe_cluster_response cluster;
    cluster.cluster_id = "c1";
    cluster.brokers.push_back({node_id(7), "10.0.0.7", 9092, std::nullopt, false, {}});
    const auto described = rewritten_sni(cluster, kafka::describe_cluster_response::max_version);
    ASSERT_EQ(described.brokers.size(), 1u);
    EXPECT_EQ(described.brokers[0].host, "broker-7.kafka.example.com");
    EXPECT_EQ(described.brokers[0].port, 9093);
}

TEST(SniRewrite, ProduceAndFetchNodeEndpointsNamedByThePattern) {
    kafka::produce_response produce;
    produce.node_endpoints.push_back({node_id(2), "10.0.0.2", 9092, std::nullopt, {}});
    const auto p = rewritten_sni(produce, kafka::produce_response::max_version);
    ASSERT_EQ(p.node_endpoints.size(), 1u);
    EXPECT_EQ(p.node_endpoints[0].host, "broker-2.kafka.example.com");
    EXPECT_EQ(p.node_endpoints[0].port, 9093);

    kafka::fetch_response fetch;
    fetch.node_endpoints.push_back({node_id(5), "10.0.0.5", 9092, std::nullopt, {}});
    const auto f = rewritten_sni(fetch, kafka::fetch_response::max_version);
    ASSERT_EQ(f.node_endpoints.size(), 1u);
    EXPECT_EQ(f.node_endpoints[0].host, "broker-5.kafka.example.com");
    EXPECT_EQ(f.node_endpoints[0].port, 9093);
}

}  // namespace
}  // namespace sluice::gateway::proxy
