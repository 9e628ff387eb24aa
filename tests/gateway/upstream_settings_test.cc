// Upstream mode's settings (gateway/server/upstream_settings.h): --upstream and its setting and
// variable, upstream.request.timeout.ms, every other upstream.<property> handed on with the
// prefix stripped (and accepted by the catalog as it is); and what /metrics shows of the
// client level's statistics (gateway/server/upstream_metrics.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gateway/core/config.h"
#include "gateway/core/settings.h"
#include "gateway/server/upstream_metrics.h"
#include "gateway/server/upstream_settings.h"

namespace sluice::gateway {
namespace {

std::optional<config> parse_upstream_args(std::vector<std::string> args,
                                          std::vector<std::string> env = {}) {
    std::vector<char*> argv;
    static std::string prog = "sluice";
    argv.push_back(prog.data());
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    return parse_command_line(static_cast<int>(argv.size()), argv.data(), env);
}

setting_catalog upstream_catalog() {
    setting_catalog c;
    c.add(upstream_setting_table());
    return c;
}

TEST(UpstreamSettings, NativeModeWithoutBootstrap) {
    auto c = parse_upstream_args({});
    ASSERT_TRUE(c);
    const auto u = read_upstream_settings(*c);
    EXPECT_FALSE(u.enabled());
    EXPECT_TRUE(u.properties.empty());
    EXPECT_EQ(u.request_timeout, std::chrono::milliseconds(30000));
}

TEST(UpstreamSettings, FlagIsTheBootstrapServersSetting) {
    auto c = parse_upstream_args({"--upstream", "k1:9092, k2:9092"});
    ASSERT_TRUE(c);
    const auto u = read_upstream_settings(*c);
    ASSERT_TRUE(u.enabled());
    EXPECT_EQ(u.bootstrap_servers, "k1:9092,k2:9092");
    EXPECT_EQ(u.properties.at("bootstrap.servers"), "k1:9092,k2:9092");
    EXPECT_NO_THROW(c->reject_unknown(upstream_catalog()));
}

TEST(UpstreamSettings, VariableAndFileNameTheSameSetting) {
    auto c = parse_upstream_args({}, {"SLUICE_UPSTREAM_BOOTSTRAP_SERVERS=k1:9092",
                                      "SLUICE_UPSTREAM_SECURITY_PROTOCOL=SASL_SSL"});
    ASSERT_TRUE(c);
    const auto u = read_upstream_settings(*c);
    EXPECT_EQ(u.bootstrap_servers, "k1:9092");
    EXPECT_EQ(u.properties.at("security.protocol"), "SASL_SSL");
}

TEST(UpstreamSettings, FlagWinsOverSetting) {
    auto c = parse_upstream_args(
        {"--set", "upstream.bootstrap.servers=a:1", "--upstream", "b:2"});
    ASSERT_TRUE(c);
    EXPECT_EQ(read_upstream_settings(*c).bootstrap_servers, "b:2");
}

TEST(UpstreamSettings, EmptyFlagIsRefused) {
    EXPECT_THROW(parse_upstream_args({"--upstream", ""}), config_error);
}

TEST(UpstreamSettings, OtherPropertiesPassThroughWithoutPrefix) {
    auto c = parse_upstream_args({"--upstream", "k:9092",
                                  "--set", "upstream.sasl.mechanism=SCRAM-SHA-512",
                                  "--set", "upstream.client.id=edge",
                                  "--set", "upstream.request.timeout.ms=1500"});
    ASSERT_TRUE(c);
    const auto u = read_upstream_settings(*c);
    EXPECT_EQ(u.request_timeout, std::chrono::milliseconds(1500));
    EXPECT_EQ(u.properties.at("sasl.mechanism"), "SCRAM-SHA-512");
    EXPECT_EQ(u.properties.at("client.id"), "edge");
    // sluice's own deadline is not a librdkafka property.
    EXPECT_EQ(u.properties.count("request.timeout.ms"), 0u);
    EXPECT_EQ(u.properties.size(), 3u);
    // Any upstream.* key is known (librdkafka judges it when the clients are built).
    EXPECT_NO_THROW(c->reject_unknown(upstream_catalog()));
}

TEST(UpstreamSettings, PrefixAloneIsNotAProperty) {
    config c;
    c.properties = {{"upstream.bootstrap.servers", "k:1"}, {"upstream.", "x"}};
    EXPECT_FALSE(upstream_catalog().known("upstream."));
    EXPECT_THROW(c.reject_unknown(upstream_catalog()), config_error);
    EXPECT_THROW(read_upstream_settings(c), config_error);
}

TEST(UpstreamSettings, TimeoutOutOfRangeIsRefused) {
    auto c = parse_upstream_args(
        {"--upstream", "k:9092", "--set", "upstream.request.timeout.ms=0"});
    ASSERT_TRUE(c);
    EXPECT_THROW(read_upstream_settings(*c), config_error);
}

TEST(UpstreamSettings, DocTableNamesThePassThrough) {
    const std::string md = settings_markdown(upstream_setting_table());
    EXPECT_NE(md.find("`upstream.bootstrap.servers`"), std::string::npos);
    EXPECT_NE(md.find("`upstream.*`"), std::string::npos);
    EXPECT_NE(settings_help_text(upstream_catalog()).find("upstream.PROPERTY"),
              std::string::npos);
}

TEST(UpstreamMetrics, NothingBeforeStatistics) {
    std::string out;
    render_upstream_metrics({}, out);
    EXPECT_TRUE(out.empty());
}

TEST(UpstreamMetrics, BrokersAndErrorsAsPrometheusLines) {
    backend::api::client::stats s;
    auto& h = s.handles.emplace_back();
    h.name = "producer";
    h.queued_messages = 4;
    h.brokers.push_back({.name = "127.0.0.1:9092/1", .node_id = 1, .state = "UP",
                         .requests_sent = 10, .request_errors = 2, .rtt_avg_us = 1500,
                         .rtt_p99_us = 4000, .throttle_avg_ms = 250});
    h.brokers.push_back({.name = "127.0.0.1:9093/2", .node_id = 2, .state = "DOWN"});
    s.errors["request_timed_out"] = 3;
    std::string out;
    render_upstream_metrics(s, out);
    const std::string labels1 = R"(handle="producer",broker="127.0.0.1:9092/1",node_id="1")";
    const std::string labels2 = R"(handle="producer",broker="127.0.0.1:9093/2",node_id="2")";
    for (const std::string& line : std::vector<std::string>{
             "# TYPE sluice_upstream_broker_up gauge",
          "sluice_upstream_broker_up{" + labels1 + "} 1",
          "sluice_upstream_broker_up{" + labels2 + "} 0",
          "sluice_upstream_broker_rtt_seconds{" + labels1 + R"(,quantile="0.99"} 0.004)",
          "sluice_upstream_broker_rtt_seconds{" + labels1 + R"(,quantile="0.5"} 0.0015)",
          "sluice_upstream_broker_throttle_seconds{" + labels1 + "} 0.25",
          "# TYPE sluice_upstream_requests_total counter",
          "sluice_upstream_requests_total{" + labels1 + "} 10",
          "sluice_upstream_request_errors_total{" + labels1 + "} 2",
          R"(sluice_upstream_queued_messages{handle="producer"} 4)",
          "# HELP sluice_upstream_call_errors_total ",
          R"(sluice_upstream_call_errors_total{error="request_timed_out"} 3)"}) {
        EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
    }
}

}  // namespace
}  // namespace sluice::gateway
