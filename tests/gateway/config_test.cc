#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "gateway/server/config.h"
#include "gateway/server/metrics.h"

namespace sluice::gateway {
namespace {

std::optional<config> parse(std::vector<std::string> args) {
    std::vector<char*> argv;
    static std::string prog = "sluice";
    argv.push_back(prog.data());
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    return parse_command_line(static_cast<int>(argv.size()), argv.data());
}

TEST(Config, DefaultsMatchTheDocumentedContract) {
    auto c = parse({});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->data_dir, "./data");
    ASSERT_EQ(c->kafka.size(), 1u);
    EXPECT_EQ(c->kafka[0].to_string(), "PLAINTEXT://0.0.0.0:9092");
    EXPECT_EQ(c->http.to_string(), "0.0.0.0:8082");
    EXPECT_EQ(c->sqs.to_string(), "0.0.0.0:9324");
    EXPECT_FALSE(c->advertise_kafka);
}

TEST(Config, ParsesEveryListenerFormAndOff) {
    auto c = parse({"--kafka", "127.0.0.1:0", "--http=off", "--sqs", "[::1]:9999",
                    "--advertise-kafka", "broker.example:19092"});
    ASSERT_TRUE(c);
    ASSERT_EQ(c->kafka.size(), 1u);
    EXPECT_EQ(c->kafka[0].where.port, 0);
    EXPECT_FALSE(c->http.enabled);
    EXPECT_EQ(c->sqs.host, "::1");
    EXPECT_EQ(c->sqs.port, 9999);
    ASSERT_TRUE(c->advertise_kafka);
    EXPECT_EQ(c->advertise_kafka->host, "broker.example");
}

TEST(Config, KafkaListenersTakeAProtocolAndRepeat) {
    auto c = parse({"--kafka", "127.0.0.1:9092", "--kafka", "sasl_plaintext://:9093", "--kafka",
                    "PLAINTEXT://[::1]:9094"});
    ASSERT_TRUE(c);
    ASSERT_EQ(c->kafka.size(), 3u);
    EXPECT_EQ(c->kafka[0].to_string(), "PLAINTEXT://127.0.0.1:9092");
    EXPECT_EQ(c->kafka[1].to_string(), "SASL_PLAINTEXT://0.0.0.0:9093");
    EXPECT_EQ(c->kafka[2].to_string(), "PLAINTEXT://[::1]:9094");
}

TEST(Config, KafkaOffOpensNoKafkaListener) {
    auto c = parse({"--kafka", "off"});
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->kafka.empty());
    EXPECT_THROW(parse({"--kafka", "off", "--kafka", "127.0.0.1:1"}), config_error);
}

TEST(Config, ListenersSettingTakesKafkasCommaList) {
    auto c = parse({"--set", "listeners=PLAINTEXT://127.0.0.1:1, SASL_PLAINTEXT://:2"});
    ASSERT_TRUE(c);
    ASSERT_EQ(c->kafka.size(), 2u);
    EXPECT_EQ(c->kafka[1].protocol, security_protocol::sasl_plaintext);
    EXPECT_EQ(c->kafka[1].where.port, 2);
    EXPECT_NO_THROW(c->reject_unknown());
}

TEST(Config, KafkaFlagWinsOverListenersSetting) {
    auto c = parse({"--set", "listeners=SASL_PLAINTEXT://:2", "--kafka", "127.0.0.1:1"});
    ASSERT_TRUE(c);
    ASSERT_EQ(c->kafka.size(), 1u);
    EXPECT_EQ(c->kafka[0].protocol, security_protocol::plaintext);
}

TEST(Config, UnknownSecurityProtocolIsRefusedByName) {
    try {
        parse({"--kafka", "INTERNAL://:9092"});
        FAIL();
    } catch (const config_error& e) {
        EXPECT_NE(std::string(e.what()).find("INTERNAL"), std::string::npos);
    }
    EXPECT_THROW(parse({"--set", "listeners=PLAINTEXT://:1,,SSL://:2"}), config_error);
    EXPECT_THROW(parse({"--kafka", "SASL_PLAINTEXT://off"}), config_error);
}

TEST(Config, TlsKafkaListenersAreAccepted) {
    auto c = parse({"--kafka", "127.0.0.1:1", "--kafka", "SASL_SSL://127.0.0.1:9094", "--kafka",
                    "ssl://127.0.0.1:9095"});
    ASSERT_TRUE(c);
    ASSERT_EQ(c->kafka.size(), 3u);
    EXPECT_EQ(c->kafka[1].protocol, security_protocol::sasl_ssl);
    EXPECT_EQ(c->kafka[2].protocol, security_protocol::ssl);
    EXPECT_NO_THROW(require_supported_listeners(*c));
}

TEST(Config, HttpAndSqsTakeAnOptionalScheme) {
    auto c = parse({"--http", "http://127.0.0.1:8000", "--sqs", "127.0.0.1:9000"});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->http.port, 8000);
    EXPECT_FALSE(c->http_tls);
    EXPECT_EQ(c->sqs.port, 9000);
    EXPECT_NO_THROW(require_supported_listeners(*c));
    EXPECT_THROW(parse({"--http", "ftp://127.0.0.1:8000"}), config_error);

    auto https = parse({"--sqs", "https://127.0.0.1:9000"});
    ASSERT_TRUE(https);
    EXPECT_TRUE(https->sqs_tls);
    try {
        require_supported_listeners(*https);
        FAIL();
    } catch (const config_error& e) {
        EXPECT_NE(std::string(e.what()).find("HTTPS is not yet supported"), std::string::npos);
    }
}

TEST(Config, RejectsBadInputWithTheFlagNamed) {
    EXPECT_THROW(parse({"--kafka", "nope"}), config_error);
    EXPECT_THROW(parse({"--kafka", "host:99999"}), config_error);
    EXPECT_THROW(parse({"--kafka"}), config_error);
    EXPECT_THROW(parse({"--bogus"}), config_error);
    EXPECT_THROW(parse({"--set", "novalue"}), config_error);
    EXPECT_THROW(parse({"--log-level", "loud"}), config_error);
    try {
        parse({"--http", "x"});
        FAIL();
    } catch (const config_error& e) {
        EXPECT_NE(std::string(e.what()).find("--http"), std::string::npos);
    }
}

TEST(Config, PropertiesFileThenSetOverrides) {
    auto path = std::filesystem::temp_directory_path() / "sluice-config-test.properties";
    {
        std::ofstream out(path);
        out << "# comment\nnum.partitions = 3\nlog.retention.hours=1\n! other comment\n";
    }
    auto c = parse({"--config", path.string(), "--set", "num.partitions=6"});
    std::filesystem::remove(path);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->get_int("num.partitions", 1), 6);
    EXPECT_EQ(c->get_int("log.retention.hours", 0), 1);
    EXPECT_EQ(c->get_int("absent", 42), 42);
    EXPECT_THROW(parse({"--config", "/nonexistent/file"}), config_error);
}

TEST(Config, TypedGettersRejectBadValues) {
    config c;
    c.properties["a"] = "12x";
    c.properties["b"] = "yes";
    EXPECT_THROW(c.get_int("a", 0), config_error);
    EXPECT_THROW(c.get_bool("b", false), config_error);
}

TEST(Config, UnknownSettingIsRefusedWithTheNearestKnownKey) {
    config c;
    c.properties["num.partitions"] = "3";
    c.properties["log.retention.hourz"] = "2";
    (void)c.get_int("num.partitions", 1);
    c.mark_known("log.retention.hours");
    try {
        c.reject_unknown();
        FAIL() << "a misspelt setting was accepted";
    } catch (const config_error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "log.retention.hourz: unknown setting (did you mean log.retention.hours?)");
    }
}

TEST(Config, SettingsSomeoneReadsAndSingleNodeOnesAreAccepted) {
    config c;
    c.properties["num.partitions"] = "3";
    c.properties["offsets.topic.replication.factor"] = "1";
    (void)c.get_int("num.partitions", 1);
    EXPECT_NO_THROW(c.reject_unknown());
    c.properties["zookeeper.connect"] = "localhost:2181";
    EXPECT_THROW(c.reject_unknown(), config_error);
}

TEST(Config, AskingForAnAbsentKeyMakesItKnown) {
    config c;
    (void)c.get_bool("delete.topic.enable", true);
    c.properties["delete.topic.enable"] = "false";
    EXPECT_NO_THROW(c.reject_unknown());
}

TEST(Metrics, RendersPrometheusText) {
    metrics_registry m;
    m.get_counter("x_total", "help x", {{"api", "Fetch"}}).inc(3);
    m.get_gauge("y", "help y").set(-2);
    m.get_histogram("z_seconds", "help z").observe(std::chrono::milliseconds(3));
    auto text = m.render();
    EXPECT_NE(text.find("# TYPE x_total counter"), std::string::npos);
    EXPECT_NE(text.find("x_total{api=\"Fetch\"} 3"), std::string::npos);
    EXPECT_NE(text.find("y -2"), std::string::npos);
    EXPECT_NE(text.find("z_seconds_bucket{le=\"0.005\"} 1"), std::string::npos);
    EXPECT_NE(text.find("z_seconds_bucket{le=\"0.0025\"} 0"), std::string::npos);
    EXPECT_NE(text.find("z_seconds_count 1"), std::string::npos);
}

TEST(Metrics, EscapesLabelValues) {
    EXPECT_EQ(metrics_registry::escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
}

}  // namespace
}  // namespace sluice::gateway
