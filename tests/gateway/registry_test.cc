#include <gtest/gtest.h>

#include <set>

#include "gateway/kafka/handlers/registry.h"
#include "protocol/kafka/api_table.h"

namespace sluice::gateway {
namespace {

TEST(HandlerRegistry, EveryRangeLiesInsideTheCodecsRange) {
    for (const auto& h : handler_registry()) {
        const auto* api = protocol::kafka::find_api(h.api_key);
        ASSERT_NE(api, nullptr) << "handler for unknown API " << h.api_key;
        EXPECT_GE(h.min_version, api->min_version) << api->name;
        EXPECT_LE(h.max_version, api->max_version) << api->name;
        EXPECT_LE(h.min_version, h.max_version) << api->name;
        EXPECT_NE(h.invoke, nullptr) << api->name;
    }
}

TEST(HandlerRegistry, KeysAreUniqueAndAscending) {
    std::int16_t last = -1;
    std::set<std::int16_t> seen;
    for (const auto& h : handler_registry()) {
        EXPECT_GT(h.api_key, last);
        EXPECT_TRUE(seen.insert(h.api_key).second);
        last = h.api_key;
    }
}

TEST(HandlerRegistry, ServesWhatEveryObservedClientNeeds) {
    // kafka-clients.md section 7: tiers 0 and 1, and the versions old clients pin.
    auto find = [](std::int16_t key) -> const handler_entry* {
        for (const auto& h : handler_registry()) {
            if (h.api_key == key) {
                return &h;
            }
        }
        return nullptr;
    };
    ASSERT_NE(find(18), nullptr);
    EXPECT_EQ(find(18)->min_version, 0);
    EXPECT_GE(find(18)->max_version, 4);
    ASSERT_NE(find(3), nullptr);
    EXPECT_EQ(find(3)->min_version, 0);  // kafka-python and sarama send Metadata v0
    ASSERT_NE(find(0), nullptr);
    EXPECT_EQ(find(0)->min_version, 0);  // librdkafka needs Produce v0 advertised
    ASSERT_NE(find(1), nullptr);
    EXPECT_LE(find(1)->min_version, 4);  // kafka-python and sarama fetch with v4
    ASSERT_NE(find(32), nullptr);
    EXPECT_EQ(find(32)->min_version, 0);  // sarama's ListTopics uses DescribeConfigs v0
}

}  // namespace
}  // namespace sluice::gateway
