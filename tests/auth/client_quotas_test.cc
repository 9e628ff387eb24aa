// Client quotas: the rate sampler, Kafka's throttle-time arithmetic, the entity precedence, the
// DescribeClientQuotas filter, AlterClientQuotas validation, and the quota file round trip.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include <gtest/gtest.h>

#include "auth/client_quotas.h"

namespace sluice::auth {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using clock_type = rate_sampler::clock;

TEST(RateSampler, FirstWindowCountsAsOneWholeWindow) {
    rate_sampler s(11, milliseconds(1000));
    const auto t0 = clock_type::time_point{} + std::chrono::hours(1);
    s.record(500, t0);
    EXPECT_DOUBLE_EQ(s.rate(t0), 500.0);
    EXPECT_EQ(s.span(t0 + milliseconds(200)), milliseconds(1000));
}

TEST(RateSampler, RateIsTotalOverTimeSinceOldestSample) {
    rate_sampler s(11, milliseconds(1000));
    const auto t0 = clock_type::time_point{} + std::chrono::hours(1);
    for (int i = 0; i < 4; ++i) {
        s.record(1000, t0 + milliseconds(1000 * i));
    }
    EXPECT_EQ(s.span(t0 + milliseconds(4000)), milliseconds(4000));
    EXPECT_DOUBLE_EQ(s.rate(t0 + milliseconds(4000)), 1000.0);
}

TEST(RateSampler, DropsSamplesOlderThanTheWindowSpan) {
    rate_sampler s(3, milliseconds(1000));
    const auto t0 = clock_type::time_point{} + std::chrono::hours(1);
    s.record(9000, t0);
    s.record(100, t0 + milliseconds(2500));
    // At t0 + 3.5 s the first sample (started at t0) is older than 3 windows: only 100 is left.
    EXPECT_DOUBLE_EQ(s.rate(t0 + milliseconds(3500)), 100.0);
    EXPECT_TRUE(s.idle(t0 + milliseconds(6000)));
}

TEST(ThrottleTime, KafkaFormulaAndCap) {
    EXPECT_EQ(throttle_time(100, 100, milliseconds(10000), milliseconds(11000)), milliseconds(0));
    EXPECT_EQ(throttle_time(150, 100, milliseconds(10000), milliseconds(11000)),
              milliseconds(5000));
    EXPECT_EQ(throttle_time(1000, 100, milliseconds(10000), milliseconds(11000)),
              milliseconds(11000));
}

class ClientQuotas : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/sluice-quota-test-XXXXXX";
        ASSERT_NE(::mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        file_ = client_quotas::path_in(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    static quota_entity entity(std::optional<std::optional<std::string>> user,
                               std::optional<std::optional<std::string>> client) {
        quota_entity e;
        if (user) {
            e.user = {true, *user};
        }
        if (client) {
            e.client_id = {true, *client};
        }
        return e;
    }
    static void set(client_quotas& q, quota_entity e, std::string key, double v) {
        q.alter({{e, {quota_op{std::move(key), v, false}}}});
    }
    void write(const std::string& text) {
        std::ofstream(file_) << text;
    }

    fs::path dir_;
    fs::path file_;
};

TEST_F(ClientQuotas, NothingConfiguredThrottlesNothing) {
    client_quotas q({}, file_);
    EXPECT_FALSE(q.any());
    EXPECT_EQ(q.record(quota_kind::producer_byte_rate, "alice", "c", 1e12), milliseconds(0));
}

TEST_F(ClientQuotas, PrecedenceFollowsKafka) {
    using o = std::optional<std::string>;
    client_quotas q({}, file_);
    const auto k = quota_kind::producer_byte_rate;
    set(q, entity(std::nullopt, o()), "producer_byte_rate", 8);          // /clients/<default>
    EXPECT_EQ(q.find(k, "alice", "c")->value, 8);
    set(q, entity(std::nullopt, o("c")), "producer_byte_rate", 7);       // /clients/c
    EXPECT_EQ(q.find(k, "alice", "c")->value, 7);
    set(q, entity(o(), std::nullopt), "producer_byte_rate", 6);          // /users/<default>
    EXPECT_EQ(q.find(k, "alice", "c")->value, 6);
    set(q, entity(o(), o()), "producer_byte_rate", 5);                   // /users/<d>/clients/<d>
    EXPECT_EQ(q.find(k, "alice", "c")->value, 5);
    set(q, entity(o(), o("c")), "producer_byte_rate", 4);                // /users/<d>/clients/c
    EXPECT_EQ(q.find(k, "alice", "c")->value, 4);
    set(q, entity(o("alice"), std::nullopt), "producer_byte_rate", 3);   // /users/alice
    EXPECT_EQ(q.find(k, "alice", "c")->value, 3);
    set(q, entity(o("alice"), o()), "producer_byte_rate", 2);            // /users/alice/clients/<d>
    EXPECT_EQ(q.find(k, "alice", "c")->value, 2);
    set(q, entity(o("alice"), o("c")), "producer_byte_rate", 1);         // /users/alice/clients/c
    EXPECT_EQ(q.find(k, "alice", "c")->value, 1);
    // Another user falls through to the defaults; another key has no quota.
    EXPECT_EQ(q.find(k, "bob", "c")->value, 4);
    EXPECT_FALSE(q.find(quota_kind::consumer_byte_rate, "alice", "c"));
}

TEST_F(ClientQuotas, StaticDefaultIsTheLastFallback) {
    quota_settings s;
    s.producer_default = 1000;
    client_quotas q(s, file_);
    EXPECT_TRUE(q.any());
    EXPECT_EQ(q.find(quota_kind::producer_byte_rate, "x", "y")->value, 1000);
    set(q, entity(std::nullopt, std::optional<std::string>()), "producer_byte_rate", 50);
    EXPECT_EQ(q.find(quota_kind::producer_byte_rate, "x", "y")->value, 50);
}

TEST_F(ClientQuotas, OverTheQuotaEarnsThrottleTime) {
    client_quotas q({}, file_);
    set(q, entity(std::optional<std::string>("alice"), std::nullopt), "producer_byte_rate", 1000);
    const auto t0 = clock_type::time_point{} + std::chrono::hours(1);
    EXPECT_EQ(q.record(quota_kind::producer_byte_rate, "alice", "a", 1000, t0), milliseconds(0));
    // Another client of alice shares /users/alice's rate: 1500 over one second is 500 over.
    EXPECT_EQ(q.record(quota_kind::producer_byte_rate, "alice", "b", 500, t0),
              milliseconds(500));
    EXPECT_EQ(q.throttle_now(quota_kind::producer_byte_rate, "alice", "b", t0),
              milliseconds(500));
    EXPECT_EQ(q.record(quota_kind::producer_byte_rate, "bob", "a", 1e9, t0), milliseconds(0));
}

TEST_F(ClientQuotas, HeadroomIsWhatIsLeftOfTheQuota) {
    client_quotas q({}, file_);
    EXPECT_FALSE(q.headroom(quota_kind::consumer_byte_rate, "alice", "a"));
    set(q, entity(std::optional<std::string>("alice"), std::nullopt), "consumer_byte_rate", 1000);
    const auto t0 = clock_type::time_point{} + std::chrono::hours(1);
    EXPECT_EQ(*q.headroom(quota_kind::consumer_byte_rate, "alice", "a", t0), 1000);
    q.record(quota_kind::consumer_byte_rate, "alice", "a", 600, t0);
    EXPECT_EQ(*q.headroom(quota_kind::consumer_byte_rate, "alice", "a", t0), 400);
    // Two seconds on, the span is two seconds: 2000 allowed, 600 used.
    EXPECT_EQ(*q.headroom(quota_kind::consumer_byte_rate, "alice", "a", t0 + milliseconds(2000)),
              1400);
}

TEST_F(ClientQuotas, DefaultUserQuotaIsPerUser) {
    client_quotas q({}, file_);
    set(q, entity(std::optional<std::string>(), std::nullopt), "consumer_byte_rate", 1000);
    const auto t0 = clock_type::time_point{} + std::chrono::hours(1);
    EXPECT_EQ(q.record(quota_kind::consumer_byte_rate, "alice", "a", 1000, t0), milliseconds(0));
    EXPECT_EQ(q.record(quota_kind::consumer_byte_rate, "bob", "a", 1000, t0), milliseconds(0));
    EXPECT_GT(q.record(quota_kind::consumer_byte_rate, "bob", "a", 1000, t0), milliseconds(0));
}

TEST_F(ClientQuotas, ValidateRefusesUnknownKeysAndBadValues) {
    EXPECT_FALSE(client_quotas::validate({{"producer_byte_rate", 1024, false}}));
    EXPECT_FALSE(client_quotas::validate({{"request_percentage", 12.5, false}}));
    EXPECT_FALSE(client_quotas::validate({{"consumer_byte_rate", -1, true}}));  // removal
    auto unknown = client_quotas::validate({{"bogus_rate", 1, false}});
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->what, quota_error::code::invalid_request);
    auto negative = client_quotas::validate({{"producer_byte_rate", -5, false}});
    ASSERT_TRUE(negative);
    EXPECT_EQ(negative->what, quota_error::code::invalid_config);
    // The value is a float64 on the wire: NaN and infinities are refused, not stored.
    auto nan = client_quotas::validate(
        {{"request_percentage", std::numeric_limits<double>::quiet_NaN(), false}});
    ASSERT_TRUE(nan);
    EXPECT_EQ(nan->what, quota_error::code::invalid_config);
    auto inf = client_quotas::validate(
        {{"producer_byte_rate", std::numeric_limits<double>::infinity(), false}});
    ASSERT_TRUE(inf);
    EXPECT_EQ(inf->what, quota_error::code::invalid_config);
    auto fraction = client_quotas::validate({{"producer_byte_rate", 1.5, false}});
    ASSERT_TRUE(fraction);
    EXPECT_EQ(fraction->what, quota_error::code::invalid_request);
    EXPECT_TRUE(client_quotas::validate(
        {{"producer_byte_rate", 1, false}, {"producer_byte_rate", 2, false}}));
}

TEST_F(ClientQuotas, ParseEntityRefusesUnknownAndDuplicateTypes) {
    quota_entity e;
    EXPECT_FALSE(parse_entity({{"user", "alice"}, {"client-id", std::nullopt}}, e));
    EXPECT_EQ(e.user, entity_part::named("alice"));
    EXPECT_EQ(e.client_id, entity_part::default_entity());
    EXPECT_TRUE(parse_entity({{"ip", "1.2.3.4"}}, e));
    EXPECT_TRUE(parse_entity({{"user", "a"}, {"user", "b"}}, e));
    EXPECT_TRUE(parse_entity({}, e));
    EXPECT_TRUE(parse_entity({{"user", ""}}, e));
}

TEST_F(ClientQuotas, DescribeFiltersByMatchTypeAndStrictness) {
    using o = std::optional<std::string>;
    client_quotas q({}, file_);
    set(q, entity(o("alice"), std::nullopt), "producer_byte_rate", 1);
    set(q, entity(o("alice"), o("c")), "producer_byte_rate", 2);
    set(q, entity(o(), std::nullopt), "consumer_byte_rate", 3);
    std::vector<client_quotas::described> out;
    ASSERT_FALSE(q.describe({{"user", 0, "alice"}}, false, out));
    EXPECT_EQ(out.size(), 2u);
    ASSERT_FALSE(q.describe({{"user", 0, "alice"}}, true, out));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].values[0].second, 1);
    ASSERT_FALSE(q.describe({{"user", 1, std::nullopt}}, false, out));
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].values[0].first, quota_kind::consumer_byte_rate);
    ASSERT_FALSE(q.describe({}, false, out));
    EXPECT_EQ(out.size(), 3u);
    EXPECT_TRUE(q.describe({{"user", 0, std::nullopt}}, false, out));
    EXPECT_TRUE(q.describe({{"user", 7, std::nullopt}}, false, out));
    EXPECT_TRUE(q.describe({{"ip", 2, std::nullopt}}, false, out));
}

TEST_F(ClientQuotas, FileRoundTripKeepsEveryValue) {
    using o = std::optional<std::string>;
    {
        client_quotas q({}, file_);
        set(q, entity(o("al ice%"), o()), "producer_byte_rate", 1048576);
        set(q, entity(std::nullopt, o("c")), "request_percentage", 12.5);
        q.alter({{entity(std::nullopt, o("c")), {quota_op{"request_percentage", 0, true}}}});
        set(q, entity(o(), std::nullopt), "consumer_byte_rate", 2048);
    }
    client_quotas again({}, file_);
    const auto all = again.entries();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(*all.at(entity(o("al ice%"), o()))[0], 1048576);
    EXPECT_EQ(*all.at(entity(o(), std::nullopt))[1], 2048);
}

TEST_F(ClientQuotas, BadFileLinesNameTheLine) {
    const std::vector<std::string> bad = {
        "not-quotas\n",
        "sluice-quotas 1\nquota =a - producer_byte_rate\n",
        "sluice-quotas 1\nquota - - producer_byte_rate 10\n",
        "sluice-quotas 1\nquota a - producer_byte_rate 10\n",
        "sluice-quotas 1\nquota =a - bogus 10\n",
        "sluice-quotas 1\nquota =a - producer_byte_rate ten\n",
        "sluice-quotas 1\nquota =a - producer_byte_rate -3\n",
        "sluice-quotas 1\nquota =a%zz - producer_byte_rate 3\n",
    };
    for (const auto& text : bad) {
        write(text);
        try {
            client_quotas q({}, file_);
            ADD_FAILURE() << "accepted: " << text;
        } catch (const std::runtime_error& e) {
            EXPECT_NE(std::string(e.what()).find(file_.string() + ":"), std::string::npos)
                << e.what();
        }
    }
}

}  // namespace
}  // namespace sluice::auth
