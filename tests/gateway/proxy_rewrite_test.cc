// The Kafka proxy's rewriting (gateway/proxy/response_rewrite.h) against hand-built upstream
// responses, at every version the schema has: the broker addresses of Metadata,
// FindCoordinator (single and batched), DescribeCluster and the KIP-951 NodeEndpoints of
// Produce and Fetch point at the gateway with the upstream's node ids; ApiVersions is the
// intersection with the codec; the proxy's own UNSUPPORTED_VERSION answer; acks=0 detection.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gateway/proxy/response_rewrite.h"
#include "protocol/kafka/api_table.h"
#include "protocol/kafka/header.h"
#include "protocol/kafka/messages/api_versions.h"
#include "protocol/kafka/messages/describe_cluster.h"
#include "protocol/kafka/messages/fetch.h"
#include "protocol/kafka/messages/find_coordinator.h"
#include "protocol/kafka/messages/metadata.h"
#include "protocol/kafka/messages/produce.h"
#include "protocol/kafka/messages/sasl_handshake.h"

namespace sluice::gateway::proxy {
namespace {
namespace kafka = protocol::kafka;

const node_addresses gateway_side{"gw.example", 19000};

/// The upstream body of `msg` at `version`, owned by a shared buffer (as a frame is).
template <typename T>
std::shared_ptr<protocol::byte_buffer> upstream_body(const T& msg, std::int16_t version) {
    protocol::writer w;
    msg.encode(w, version);
    auto flat = std::make_shared<protocol::byte_buffer>(w.flatten());
    return flat;
}

/// Rewrites `msg` at `version` and decodes the result; fails the test when nothing changed.
template <typename T>
T rewritten(const T& msg, std::int16_t version, std::vector<upstream_broker>* seen = nullptr) {
    auto body = upstream_body(msg, version);
    protocol::writer out;
    auto r = rewrite_response_body(static_cast<std::int16_t>(T::key), version, body->view(), body,
                                   gateway_side, seen, out);
    EXPECT_TRUE(r.has_value()) << "v" << version;
    EXPECT_TRUE(r.value_or(false)) << "v" << version << ": not rewritten";
    const auto flat = out.flatten();
    protocol::reader rd(flat.view());
    T back;
    back.decode(rd, version);
    EXPECT_TRUE(rd.ok() && rd.remaining() == 0) << "v" << version;
    return back;
}

TEST(ProxyRewrite, MetadataBrokersPointAtTheGatewayAtEveryVersion) {
    for (std::int16_t v = kafka::metadata_response::min_version;
         v <= kafka::metadata_response::max_version; ++v) {
        kafka::metadata_response m;
        m.brokers.push_back({node_id(1), "10.0.0.1", 9092, std::string("r1"), {}});
        m.brokers.push_back({node_id(3), "kafka-3.internal", 9093, std::nullopt, {}});
        m.controller_id = node_id(3);
        kafka::metadata_response::metadata_response_topic t;
        t.name = "orders";
        t.partitions.push_back({kafka::error_code::none, partition_id(0), node_id(3), 5,
                                {node_id(1), node_id(3)}, {node_id(3)}, {}, {}});
        m.topics.push_back(t);
        std::vector<upstream_broker> seen;
        const auto back = rewritten(m, v, &seen);
        ASSERT_EQ(back.brokers.size(), 2u);
        EXPECT_EQ(back.brokers[0].node_id, node_id(1));
        EXPECT_EQ(back.brokers[0].host, "gw.example");
        EXPECT_EQ(back.brokers[0].port, 19001);
        EXPECT_EQ(back.brokers[1].host, "gw.example");
        EXPECT_EQ(back.brokers[1].port, 19003);
        // Everything else as the upstream said it (as far as this version carries it).
        const auto body = upstream_body(m, v);
        protocol::reader plain(body->view());
        kafka::metadata_response as_sent;
        as_sent.decode(plain, v);
        EXPECT_EQ(back.topics, as_sent.topics) << "v" << v;
        EXPECT_EQ(back.controller_id, as_sent.controller_id) << "v" << v;
        ASSERT_EQ(seen.size(), 2u);
        EXPECT_EQ(seen[1], (upstream_broker{3, "kafka-3.internal", 9093, std::nullopt}));
    }
}

TEST(ProxyRewrite, FindCoordinatorSingleAndBatchedAtEveryVersion) {
    for (std::int16_t v = kafka::find_coordinator_response::min_version;
         v <= kafka::find_coordinator_response::max_version; ++v) {
        kafka::find_coordinator_response m;
        if (v < 4) {
            m.node_id = node_id(2);
            m.host = "10.0.0.2";
            m.port = 9092;
        } else {
            m.coordinators.push_back({"group-a", node_id(2), "10.0.0.2", 9092,
                                      kafka::error_code::none, std::nullopt, {}});
            // Not available: no node, the upstream's placeholder stays.
            m.coordinators.push_back({"group-b", node_id(-1), "", -1,
                                      kafka::error_code::coordinator_not_available,
                                      std::nullopt, {}});
        }
        const auto back = rewritten(m, v);
        if (v < 4) {
            EXPECT_EQ(back.node_id, node_id(2));
            EXPECT_EQ(back.host, "gw.example");
            EXPECT_EQ(back.port, 19002);
        } else {
            ASSERT_EQ(back.coordinators.size(), 2u);
            EXPECT_EQ(back.coordinators[0].host, "gw.example");
            EXPECT_EQ(back.coordinators[0].port, 19002);
            EXPECT_EQ(back.coordinators[1].host, "");
            EXPECT_EQ(back.coordinators[1].port, -1);
        }
    }
}

TEST(ProxyRewrite, DescribeClusterBrokersAtEveryVersion) {
    for (std::int16_t v = kafka::describe_cluster_response::min_version;
         v <= kafka::describe_cluster_response::max_version; ++v) {
        kafka::describe_cluster_response m;
        m.cluster_id = "c1";
        m.brokers.push_back({node_id(7), "10.0.0.7", 9092, std::nullopt, false, {}});
        std::vector<upstream_broker> seen;
        const auto back = rewritten(m, v, &seen);
        ASSERT_EQ(back.brokers.size(), 1u);
        EXPECT_EQ(back.brokers[0].broker_id, node_id(7));
        EXPECT_EQ(back.brokers[0].host, "gw.example");
        EXPECT_EQ(back.brokers[0].port, 19007);
        EXPECT_EQ(seen.size(), 1u);
    }
}

TEST(ProxyRewrite, ProduceNodeEndpointsFromV10) {
    for (std::int16_t v = 10; v <= kafka::produce_response::max_version; ++v) {
        kafka::produce_response m;
        m.node_endpoints.push_back({node_id(2), "10.0.0.2", 9092, std::nullopt, {}});
        const auto back = rewritten(m, v);
        ASSERT_EQ(back.node_endpoints.size(), 1u);
        EXPECT_EQ(back.node_endpoints[0].host, "gw.example");
        EXPECT_EQ(back.node_endpoints[0].port, 19002);
    }
    EXPECT_FALSE(rewrites_response(static_cast<std::int16_t>(kafka::api_key::produce), 9));
}

TEST(ProxyRewrite, ProduceWithoutNodeEndpointsGoesOutUnchanged) {
    kafka::produce_response m;
    auto body = upstream_body(m, 11);
    protocol::writer out;
    auto r = rewrite_response_body(0, 11, body->view(), body, gateway_side, nullptr, out);
    ASSERT_TRUE(r.has_value());
    EXPECT_FALSE(*r);
    EXPECT_EQ(out.size(), 0u);
}

TEST(ProxyRewrite, FetchNodeEndpointsFromV16WithRecordsSplicedNotCopied) {
    std::vector<std::byte> batch(4096, std::byte{0x5a});
    for (std::int16_t v = 16; v <= kafka::fetch_response::max_version; ++v) {
        kafka::fetch_response m;
        kafka::fetch_response::fetchable_topic_response t;
        t.topic_id.bytes[0] = 1;
        kafka::fetch_response::partition_data p;
        p.records = kafka::records::copy_of(protocol::bytes_view(batch.data(), batch.size()));
        p.current_leader.leader_id = node_id(2);
        t.partitions.push_back(p);
        m.responses.push_back(t);
        m.node_endpoints.push_back({node_id(2), "10.0.0.2", 9092, std::nullopt, {}});
        auto body = upstream_body(m, v);
        protocol::writer out;
        auto r = rewrite_response_body(1, v, body->view(), body, gateway_side, nullptr, out);
        ASSERT_TRUE(r.has_value() && *r) << "v" << v;
        // The records are a splice of the upstream body, not a copy.
        ASSERT_EQ(out.splices().size(), 1u) << "v" << v;
        const auto& chunk = std::get<protocol::shared_bytes>(out.splices()[0].chunk);
        EXPECT_GE(chunk.data.data(), body->data());
        EXPECT_LT(chunk.data.data(), body->data() + body->size());
        const auto flat = out.flatten();
        protocol::reader rd(flat.view());
        kafka::fetch_response back;
        back.decode(rd, v);
        ASSERT_TRUE(rd.ok());
        EXPECT_EQ(back.node_endpoints[0].port, 19002);
        EXPECT_EQ(back.responses[0].partitions[0].records.size(), batch.size());
    }
    EXPECT_FALSE(rewrites_response(1, 15));
}

TEST(ProxyRewrite, MalformedBodyIsAnError) {
    kafka::metadata_response m;
    m.brokers.push_back({node_id(1), "10.0.0.1", 9092, std::nullopt, {}});
    auto body = upstream_body(m, 1);
    auto cut = std::make_shared<protocol::byte_buffer>();
    cut->append(body->view().first(body->size() - 3));
    protocol::writer out;
    EXPECT_FALSE(rewrite_response_body(3, 1, cut->view(), cut, gateway_side, nullptr, out));
}

TEST(ProxyRewrite, TrailingBytesAfterTheBodyGoOutAsTheyCame) {
    // compat: librdkafka 2.12's mock cluster ends Metadata v9+ with a byte Kafka's clients
    // ignore.
    kafka::metadata_response m;
    m.brokers.push_back({node_id(1), "10.0.0.1", 9092, std::nullopt, {}});
    auto body = upstream_body(m, 9);
    const std::byte extra[] = {std::byte{0}};
    body->append(protocol::bytes_view(extra, 1));
    protocol::writer out;
    ASSERT_TRUE(rewrite_response_body(3, 9, body->view(), body, gateway_side, nullptr, out)
                    .value_or(false));
    const auto flat = out.flatten();
    protocol::reader rd(flat.view());
    kafka::metadata_response back;
    back.decode(rd, 9);
    ASSERT_TRUE(rd.ok());
    EXPECT_EQ(back.brokers[0].port, 19001);
    EXPECT_EQ(rd.remaining(), 1u);
}

TEST(ProxyApiVersions, IntersectionWithTheCodecKeepsProduceMinZero) {
    const auto* produce = kafka::find_api(kafka::api_key::produce);
    EXPECT_EQ(intersect_versions(0, {3, 11}),
              (version_range{0, std::min<std::int16_t>(11, produce->max_version)}));
    const auto* fetch = kafka::find_api(kafka::api_key::fetch);
    EXPECT_EQ(intersect_versions(1, {4, 100}), (version_range{4, fetch->max_version}));
    EXPECT_EQ(intersect_versions(3, {0, 5}), (version_range{0, 5}));
    EXPECT_FALSE(intersect_versions(1000, {0, 3}));  // a key the codec does not know
    EXPECT_FALSE(intersect_versions(3, {50, 60}));   // no common version
}

TEST(ProxyApiVersions, UpstreamAnswerIsIntersectedAndSetsWhatIsOffered) {
    for (std::int16_t v = 0; v <= kafka::api_versions_response::max_version; ++v) {
        kafka::api_versions_response m;
        m.api_keys.push_back({kafka::api_key::produce, 3, 11, {}});
        m.api_keys.push_back({kafka::api_key::metadata, 0, 12, {}});
        m.api_keys.push_back({static_cast<kafka::api_key>(1000), 0, 1, {}});  // unknown to us
        auto body = upstream_body(m, v);
        offered_apis offered;
        protocol::writer out;
        auto r = rewrite_api_versions(v, body->view(), body, offered, out);
        ASSERT_TRUE(r.has_value() && *r);
        const auto flat = out.flatten();
        protocol::reader rd(flat.view());
        kafka::api_versions_response back;
        back.decode(rd, v);
        ASSERT_TRUE(rd.ok());
        ASSERT_EQ(back.api_keys.size(), 2u) << "v" << v;
        EXPECT_EQ(back.api_keys[0].min_version, 0);
        EXPECT_EQ(back.api_keys[1].max_version, 12);
        EXPECT_TRUE(offered.offers(3, 12));
        EXPECT_FALSE(offered.offers(3, 13));
        EXPECT_FALSE(offered.offers(1, 4));  // Fetch: the upstream offered none
        EXPECT_TRUE(offered.offers(18, 0));  // ApiVersions stays answerable
    }
}

TEST(ProxyApiVersions, UnsupportedVersionAnswerFromUpstreamIsReadAtV0) {
    kafka::api_versions_response m;
    m.error_code = kafka::error_code::unsupported_version;
    m.api_keys.push_back({kafka::api_key::api_versions, 0, 2, {}});
    auto body = upstream_body(m, 0);
    offered_apis offered;
    protocol::writer out;
    auto r = rewrite_api_versions(3, body->view(), body, offered, out);
    ASSERT_TRUE(r.has_value() && *r);
    const auto flat = out.flatten();
    protocol::reader rd(flat.view());
    kafka::api_versions_response back;
    back.decode(rd, 0);
    ASSERT_TRUE(rd.ok());
    EXPECT_EQ(back.error_code, kafka::error_code::unsupported_version);
    ASSERT_EQ(back.api_keys.size(), 1u);
    EXPECT_EQ(back.api_keys[0].max_version, 2);  // the client retries with what both take
    EXPECT_TRUE(offered.offers(1, 4));           // unchanged: still the codec's list
}

TEST(ProxyApiVersions, UnreadableUpstreamErrorAnswerFallsBackToV0) {
    // librdkafka 2.0.2's mock cluster answers ApiVersions v3 with a flexible array in a v0 body.
    const unsigned char mock[] = {0x00, 0x23, 0x01, 0x00, 0x12, 0x00, 0x00, 0x00,
                                  0x02, 0x00, 0x00, 0x00, 0x00, 0x00};
    auto body = std::make_shared<protocol::byte_buffer>();
    body->append(protocol::bytes_view(reinterpret_cast<const std::byte*>(mock), sizeof mock));
    offered_apis offered;
    protocol::writer out;
    auto r = rewrite_api_versions(3, body->view(), body, offered, out);
    ASSERT_TRUE(r.has_value() && *r);
    const auto flat = out.flatten();
    protocol::reader rd(flat.view());
    kafka::api_versions_response back;
    back.decode(rd, 0);
    ASSERT_TRUE(rd.ok() && rd.remaining() == 0);
    EXPECT_EQ(back.error_code, kafka::error_code::unsupported_version);
    EXPECT_EQ(back.api_keys.at(0).max_version, 0);
}

TEST(ProxyApiVersions, OwnAnswerIsUnsupportedVersionWithTheOfferedList) {
    offered_apis offered;
    const auto w = unsupported_version_answer(42, offered);
    const auto flat = w.flatten();
    ASSERT_GE(flat.size(), 10u);
    EXPECT_EQ(protocol::load_i32(flat.data()), static_cast<std::int32_t>(flat.size() - 4));
    EXPECT_EQ(protocol::load_i32(flat.data() + 4), 42);
    protocol::reader rd(flat.view().subspan(8));
    kafka::api_versions_response back;
    back.decode(rd, 0);
    ASSERT_TRUE(rd.ok());
    EXPECT_EQ(back.error_code, kafka::error_code::unsupported_version);
    EXPECT_EQ(back.api_keys.size(), kafka::all_apis().size());
    EXPECT_FALSE(offered.offers(1000, 0));
    EXPECT_FALSE(offered.offers(-1, 0));
}

TEST(ProxyApiVersions, SaslHandshakeV0RefusalIsAV0AnswerWithoutMechanisms) {
    const auto flat = sasl_handshake_v0_refusal(7).flatten();
    ASSERT_GE(flat.size(), 8u);
    EXPECT_EQ(protocol::load_i32(flat.data()), static_cast<std::int32_t>(flat.size() - 4));
    EXPECT_EQ(protocol::load_i32(flat.data() + 4), 7);
    protocol::reader rd(flat.view().subspan(8));
    kafka::sasl_handshake_response back;
    back.decode(rd, 0);
    ASSERT_TRUE(rd.ok());
    EXPECT_EQ(rd.remaining(), 0u);
    EXPECT_EQ(back.error_code, kafka::error_code::unsupported_version);
    EXPECT_TRUE(back.mechanisms.empty());
}

TEST(ProxyRequests, ProduceAcksZeroExpectsNoResponse) {
    for (std::int16_t v : {0, 3, 9, 11}) {
        for (std::int16_t acks : {0, 1, -1}) {
            kafka::produce_request req;
            req.acks = acks;
            protocol::writer w;
            req.encode(w, v);
            const auto flat = w.flatten();
            EXPECT_EQ(produce_expects_response(v, flat.view()), acks != 0) << "v" << v;
        }
    }
}

TEST(ProxyResponses, BodyOffsetSkipsTheFlexibleHeaderTags) {
    protocol::writer w;
    kafka::encode_response_header(w, 7, 1);
    const std::size_t header = w.size();
    w.i32(99);
    const auto flat = w.flatten();
    EXPECT_EQ(response_body_offset(flat.view(), 1).value(), header);
    EXPECT_EQ(response_body_offset(flat.view(), 0).value(), 4u);
    EXPECT_FALSE(response_body_offset(flat.view().first(2), 0));
}

}  // namespace
}  // namespace sluice::gateway::proxy
