// The embedded consumer protocol and the classic assignors: real clients' JoinGroup metadata
// (captured fixtures) decodes, encodings round-trip, and range / roundrobin assign as Kafka's
// RangeAssignor and RoundRobinAssignor do.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

#include "protocol/kafka/all_messages.h"
#include "protocol/kafka/classic_assignor.h"
#include "protocol/kafka/consumer_protocol.h"
#include "protocol/kafka/header.h"

namespace sluice::protocol::kafka {
namespace {

const std::filesystem::path fixture_dir = std::filesystem::path(SLUICE_FIXTURE_DIR) / "kafka";

join_group_request load_join_group(const std::string& name) {
    std::ifstream in(fixture_dir / (name + ".bin"), std::ios::binary);
    const std::vector<char> raw((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
    auto frame = std::make_shared<byte_buffer>();
    frame->append(bytes_view(reinterpret_cast<const std::byte*>(raw.data()), raw.size()));
    reader r(frame->view(), frame);
    auto header = decode_request_header(r);
    join_group_request req;
    if (header) {
        req.decode(r, header->api_version);
    }
    return req;
}

bytes_view view_of(const std::vector<std::byte>& b) { return {b.data(), b.size()}; }

TEST(ConsumerProtocol, DecodesRealClientsSubscriptions) {
    for (const char* name : {"join_group_v5_confluent_fb3537e0", "join_group_v5_kafkajs_43fb19cd",
                             "join_group_v2_kafkapython_589b8291",
                             "join_group_v1_sarama_af70580f"}) {
        auto req = load_join_group(name);
        ASSERT_FALSE(req.protocols.empty()) << name;
        EXPECT_EQ(req.protocol_type, consumer_protocol_type) << name;
        for (const auto& p : req.protocols) {
            auto sub = decode_subscription(view_of(p.metadata));
            ASSERT_TRUE(sub) << name << " " << p.name << ": " << sub.error().message();
            EXPECT_FALSE(sub->topics.empty()) << name << " " << p.name;
        }
    }
}

TEST(ConsumerProtocol, SubscriptionRoundTripsEveryVersion) {
    for (std::int16_t v = 0; v <= 3; ++v) {
        consumer_subscription s;
        s.version = v;
        s.topics = {"a", "b"};
        s.user_data = std::string("\x01\x02", 2);
        if (v >= 1) {
            s.owned_partitions = {{"a", {0, 2}}};
        }
        if (v >= 2) {
            s.generation = 7;
        }
        if (v >= 3) {
            s.rack = "r1";
        }
        auto bytes = encode_subscription(s);
        auto back = decode_subscription(bytes.view());
        ASSERT_TRUE(back) << v;
        EXPECT_EQ(back->topics, s.topics);
        EXPECT_EQ(back->user_data, s.user_data);
        EXPECT_EQ(back->owned_partitions, s.owned_partitions);
        EXPECT_EQ(back->generation, s.generation);
        EXPECT_EQ(back->rack, s.rack);
    }
}

TEST(ConsumerProtocol, AssignmentRoundTripsAndEmptyBytesMeanNothing) {
    consumer_assignment a;
    a.partitions = {{"t", {0, 1, 2}}, {"u", {5}}};
    auto bytes = encode_assignment(a);
    auto back = decode_assignment(bytes.view());
    ASSERT_TRUE(back);
    EXPECT_EQ(back->partitions, a.partitions);
    auto none = decode_assignment({});
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->partitions.empty());
}

TEST(ConsumerProtocol, MalformedBytesAreErrors) {
    const std::byte junk[] = {std::byte{0}, std::byte{0}, std::byte{0x7f}, std::byte{0xff},
                              std::byte{0xff}, std::byte{0xff}};
    EXPECT_FALSE(decode_subscription(bytes_view(junk, sizeof junk)));
    EXPECT_FALSE(decode_assignment(bytes_view(junk, sizeof junk)));
    const std::byte negative[] = {std::byte{0xff}, std::byte{0xff}};
    EXPECT_FALSE(decode_subscription(bytes_view(negative, sizeof negative)));
}

TEST(ClassicAssignor, RangeGivesContiguousRangesPerTopic) {
    std::vector<assignor_member> members = {{"m2", {"t"}}, {"m1", {"t", "u"}}, {"m3", {"t"}}};
    auto out = assign_range(members, {{"t", 7}, {"u", 2}});
    EXPECT_EQ(out["m1"]["t"], (std::vector<std::int32_t>{0, 1, 2}));
    EXPECT_EQ(out["m2"]["t"], (std::vector<std::int32_t>{3, 4}));
    EXPECT_EQ(out["m3"]["t"], (std::vector<std::int32_t>{5, 6}));
    EXPECT_EQ(out["m1"]["u"], (std::vector<std::int32_t>{0, 1}));
    EXPECT_FALSE(out["m2"].contains("u"));
}

TEST(ClassicAssignor, EveryMemberAppearsEvenWithNothing) {
    std::vector<assignor_member> members = {{"a", {"t"}}, {"b", {"t"}}, {"c", {"other"}}};
    auto out = assign_range(members, {{"t", 1}});
    EXPECT_EQ(out.size(), 3u);
    EXPECT_EQ(out["a"]["t"], (std::vector<std::int32_t>{0}));
    EXPECT_TRUE(out["b"].empty());
    EXPECT_TRUE(out["c"].empty());
}

TEST(ClassicAssignor, RoundRobinAlternatesOverSubscribedMembers) {
    std::vector<assignor_member> members = {{"b", {"t"}}, {"a", {"t", "u"}}};
    auto out = assign_roundrobin(members, {{"t", 3}, {"u", 2}});
    EXPECT_EQ(out["a"]["t"], (std::vector<std::int32_t>{0, 2}));
    EXPECT_EQ(out["b"]["t"], (std::vector<std::int32_t>{1}));
    EXPECT_EQ(out["a"]["u"], (std::vector<std::int32_t>{0, 1}));
}

}  // namespace
}  // namespace sluice::protocol::kafka
