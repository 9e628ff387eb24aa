#include <gtest/gtest.h>

#include "backend/log/errc.h"
#include "backend/log/topic_config.h"
#include "backend/log/topic_store.h"

namespace sluice::backend::log {
namespace {

TEST(TopicConfig, DefaultsMatchKafka) {
    auto m = topic_config{}.to_map();
    EXPECT_EQ(m.at("segment.bytes"), "1073741824");
    EXPECT_EQ(m.at("segment.ms"), "604800000");
    EXPECT_EQ(m.at("retention.ms"), "604800000");
    EXPECT_EQ(m.at("retention.bytes"), "-1");
    EXPECT_EQ(m.at("cleanup.policy"), "delete");
    EXPECT_EQ(m.at("delete.retention.ms"), "86400000");
    EXPECT_EQ(m.at("min.compaction.lag.ms"), "0");
    EXPECT_EQ(m.at("max.message.bytes"), "1048588");
    EXPECT_EQ(m.at("message.timestamp.type"), "CreateTime");
    EXPECT_EQ(m.at("index.interval.bytes"), "4096");
    EXPECT_EQ(m.at("min.cleanable.dirty.ratio"), "0.5");
    EXPECT_EQ(m.at("max.compaction.lag.ms"), "9223372036854775807");
}

TEST(TopicConfig, TableDefaultsAgreeWithStructDefaults) {
    auto m = topic_config{}.to_map();
    ASSERT_EQ(m.size(), topic_config_defs().size());
    for (const auto& d : topic_config_defs()) {
        EXPECT_EQ(m.at(std::string(d.name)), d.default_value) << d.name;
        EXPECT_FALSE(d.documentation.empty()) << d.name;
    }
}

TEST(TopicConfig, DynamicBrokerPropertiesReplaceTheirSynonyms) {
    std::map<std::string, std::string> props{{"log.retention.ms", "1000"},
                                             {"log.segment.bytes", "2048"}};
    override_broker_properties(props, {{"log.retention.hours", "2"}});
    EXPECT_EQ(props.count("log.retention.ms"), 0u);
    auto c = broker_defaults(props);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->retention_ms, 7200000);
    EXPECT_EQ(c->segment_bytes, 2048);
    EXPECT_EQ(broker_config_synonyms("log.roll.hours"),
              (std::vector<std::string_view>{"log.roll.ms", "log.roll.hours"}));
    EXPECT_EQ(broker_config_synonyms("message.max.bytes"),
              (std::vector<std::string_view>{"message.max.bytes"}));
}

TEST(TopicConfig, MessageFormatVersionIsAcceptedAndIgnored) {
    auto c = topic_config::from_overrides({{"message.format.version", "2.8-IV1"}}, {});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->get("message.format.version"), "2.8-IV1");
    topic_config plain;
    plain.message_format_version = c->message_format_version;
    EXPECT_EQ(*c, plain);  // nothing else changes
    EXPECT_FALSE(topic_config::from_overrides({{"message.format.version", "new"}}, {}));
}

TEST(TopicConfig, OverridesApplyOverDefaults) {
    topic_config defaults;
    defaults.retention_ms = 1000;
    auto c = topic_config::from_overrides({{"cleanup.policy", "compact,delete"},
                                           {"message.timestamp.type", "LogAppendTime"},
                                           {"segment.bytes", "1048576"}},
                                          defaults);
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->cleanup_compact);
    EXPECT_TRUE(c->cleanup_delete);
    EXPECT_EQ(c->message_timestamp_type, timestamp_type::log_append_time);
    EXPECT_EQ(c->segment_bytes, 1048576);
    EXPECT_EQ(c->retention_ms, 1000);
    EXPECT_EQ(c->get("cleanup.policy"), "compact,delete");
}

TEST(TopicConfig, UnknownKeyIsRejectedWithItsName) {
    std::string why;
    auto c = topic_config::from_overrides({{"retention.msx", "1"}}, {}, &why);
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error(), errc::invalid_config);
    EXPECT_NE(why.find("retention.msx"), std::string::npos);
}

TEST(TopicConfig, BadValuesAreRejected) {
    for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
             {"segment.bytes", "13"},
             {"segment.bytes", "abc"},
             {"retention.ms", "-2"},
             {"cleanup.policy", "delete,remove"},
             {"message.timestamp.type", "createtime"},
             {"min.cleanable.dirty.ratio", "1.5"},
             {"segment.bytes", "4294967296"},
         }) {
        std::string why;
        auto c = topic_config::from_overrides({{k, v}}, {}, &why);
        EXPECT_FALSE(c) << k << "=" << v;
        EXPECT_NE(why.find(k), std::string::npos) << why;
    }
}

TEST(TopicConfig, BrokerDefaultsReadKafkaPropertyNames) {
    auto c = broker_defaults({{"log.segment.bytes", "2048"},
                              {"log.retention.hours", "2"},
                              {"log.retention.bytes", "5000"},
                              {"log.cleanup.policy", "compact"},
                              {"message.max.bytes", "777"},
                              {"log.message.timestamp.type", "LogAppendTime"},
                              {"log.roll.hours", "1"},
                              {"broker.id", "7"}});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->segment_bytes, 2048);
    EXPECT_EQ(c->retention_ms, 2 * 3600000);
    EXPECT_EQ(c->retention_bytes, 5000);
    EXPECT_TRUE(c->cleanup_compact);
    EXPECT_FALSE(c->cleanup_delete);
    EXPECT_EQ(c->max_message_bytes, 777);
    EXPECT_EQ(c->message_timestamp_type, timestamp_type::log_append_time);
    EXPECT_EQ(c->segment_ms, 3600000);
}

TEST(TopicConfig, BrokerRetentionMsWinsOverHoursAndMinutes) {
    auto c = broker_defaults({{"log.retention.hours", "2"},
                              {"log.retention.minutes", "3"},
                              {"log.retention.ms", "1234"}});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->retention_ms, 1234);
    auto m = broker_defaults({{"log.retention.hours", "2"}, {"log.retention.minutes", "3"}});
    ASSERT_TRUE(m);
    EXPECT_EQ(m->retention_ms, 180000);
    auto forever = broker_defaults({{"log.retention.hours", "-1"}});
    ASSERT_TRUE(forever);
    EXPECT_EQ(forever->retention_ms, -1);
}

TEST(TopicConfig, BrokerDefaultsRejectBadValueNamingTheProperty) {
    std::string why;
    auto c = broker_defaults({{"log.segment.bytes", "x"}}, &why);
    ASSERT_FALSE(c);
    EXPECT_NE(why.find("log.segment.bytes"), std::string::npos);
}

TEST(TopicStore, RoundTripsAndDetectsDamage) {
    topic_record r{"orders.v1", uuid::random(), 12, true, {{"retention.ms", "1000"}}};
    std::string text = encode_topic_record(r);
    auto back = decode_topic_record(protocol::as_bytes(text));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, r);
    std::string damaged = text;
    damaged[damaged.find("12")] = '3';
    EXPECT_FALSE(decode_topic_record(protocol::as_bytes(damaged)));
}

}  // namespace
}  // namespace sluice::backend::log
