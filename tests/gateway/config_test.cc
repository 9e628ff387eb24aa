#include <gtest/gtest.h>

#include <fstream>
#include <unistd.h>
#include <vector>

#include "gateway/core/config.h"
#include "gateway/core/metrics.h"
#include "gateway/core/settings.h"

namespace sluice::gateway {
namespace {

std::optional<config> parse(std::vector<std::string> args, std::vector<std::string> env = {}) {
    std::vector<char*> argv;
    static std::string prog = "sluice";
    argv.push_back(prog.data());
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    return parse_command_line(static_cast<int>(argv.size()), argv.data(), env);
}

constexpr setting num_partitions{.name = "num.partitions", .type = setting_type::integer,
                                 .default_value = "1"};
constexpr setting retention_hours{.name = "log.retention.hours", .type = setting_type::integer,
                                  .default_value = "168"};
constexpr setting segment_bytes{.name = "log.segment.bytes", .type = setting_type::integer,
                                .default_value = "1024"};
constexpr setting delete_topic{.name = "delete.topic.enable", .type = setting_type::boolean,
                               .default_value = "true"};
constexpr setting declared_settings[] = {num_partitions, retention_hours, segment_bytes,
                                         delete_topic};

/// A catalog declaring a few of the broker's settings (the flags' own table is always known).
setting_catalog known_settings() {
    return setting_catalog(
        {setting_table{.module = "test", .title = "Test", .settings = declared_settings}});
}

std::int64_t int_of(const config& c, const setting& s) {
    return config_values(c).get_int(s);
}

std::string error_of(std::vector<std::string> args, std::vector<std::string> env = {}) {
    try {
        parse(std::move(args), std::move(env));
    } catch (const config_error& e) {
        return e.what();
    }
    return "";
}

/// A properties file in the temp dir, removed at the end of the test.
struct temp_properties {
    std::filesystem::path path;
    explicit temp_properties(const std::string& text)
        : path(std::filesystem::temp_directory_path() /
               ("sluice-config-" + std::to_string(::getpid()) + ".properties")) {
        std::ofstream(path) << text;
    }
    ~temp_properties() { std::filesystem::remove(path); }
};

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
    EXPECT_NO_THROW(c->reject_unknown(setting_catalog()));
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
}

TEST(Config, HttpAndSqsTakeAnOptionalScheme) {
    auto c = parse({"--http", "http://127.0.0.1:8000", "--sqs", "127.0.0.1:9000"});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->http.port, 8000);
    EXPECT_FALSE(c->http_tls);
    EXPECT_EQ(c->sqs.port, 9000);
    EXPECT_THROW(parse({"--http", "ftp://127.0.0.1:8000"}), config_error);

    auto https = parse({"--sqs", "https://127.0.0.1:9000", "--http", "HTTPS://127.0.0.1:8443"});
    ASSERT_TRUE(https);
    EXPECT_TRUE(https->sqs_tls);
    EXPECT_TRUE(https->http_tls);
    EXPECT_EQ(https->http.port, 8443);
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
    EXPECT_EQ(int_of(*c, num_partitions), 6);
    EXPECT_EQ(int_of(*c, retention_hours), 1);
    EXPECT_EQ(int_of(*c, segment_bytes), 1024);  // the default
    EXPECT_THROW(parse({"--config", "/nonexistent/file"}), config_error);
}

TEST(Config, TypedGettersRejectBadValues) {
    config c;
    c.properties["a"] = "12x";
    c.properties["b"] = "yes";
    constexpr setting a{.name = "a", .type = setting_type::integer, .default_value = "0"};
    constexpr setting b{.name = "b", .type = setting_type::boolean, .default_value = "false"};
    EXPECT_THROW(int_of(c, a), config_error);
    EXPECT_THROW((void)config_values(c).get_bool(b), config_error);
}

TEST(Config, UnknownSettingIsRefusedWithTheNearestKnownKey) {
    config c;
    c.properties["num.partitions"] = "3";
    c.properties["log.retention.hourz"] = "2";
    try {
        c.reject_unknown(known_settings());
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
    EXPECT_NO_THROW(c.reject_unknown(known_settings()));
    c.properties["zookeeper.connect"] = "localhost:2181";
    EXPECT_THROW(c.reject_unknown(known_settings()), config_error);
}

TEST(Config, ADeclaredKeyIsKnown) {
    config c;
    c.properties["delete.topic.enable"] = "false";
    EXPECT_NO_THROW(c.reject_unknown(known_settings()));
}

TEST(Config, VariableNamesFollowConfluentsMapping) {
    EXPECT_EQ(setting_to_variable("log.retention.hours"), "SLUICE_LOG_RETENTION_HOURS");
    EXPECT_EQ(setting_to_variable("listener.name.sasl_ssl.ssl.key.location"),
              "SLUICE_LISTENER_NAME_SASL__SSL_SSL_KEY_LOCATION");
    EXPECT_EQ(setting_to_variable("a-b.c"), "SLUICE_A___B_C");
    for (std::string key : {"log.retention.hours", "listener.name.sasl_ssl.ssl.key.location",
                            "a-b.c", "x_y-z.w", "data.dir"}) {
        EXPECT_EQ(variable_to_setting(setting_to_variable(key)), key);
    }
    EXPECT_FALSE(variable_to_setting("OTHER_THING"));
}

TEST(Config, EveryFlagIsAlsoASettingAndAVariable) {
    temp_properties file(
        "data.dir=/from/file\nhttp.listener=127.0.0.1:1\nsqs.listener=off\n"
        "listeners=PLAINTEXT://127.0.0.1:2,SASL_PLAINTEXT://127.0.0.1:3\n"
        "advertised.listeners=PLAINTEXT://broker.example:9092\nlog.level=warn\n"
        "log.format=json\nio.threads=3\n");
    auto c = parse({"--config", file.path.string()});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->data_dir, "/from/file");
    EXPECT_EQ(c->http.to_string(), "127.0.0.1:1");
    EXPECT_FALSE(c->sqs.enabled);
    ASSERT_EQ(c->kafka.size(), 2u);
    EXPECT_EQ(c->kafka[1].to_string(), "SASL_PLAINTEXT://127.0.0.1:3");
    ASSERT_TRUE(c->advertise_kafka);
    EXPECT_EQ(c->advertise_kafka->to_string(), "broker.example:9092");
    EXPECT_EQ(c->log_level, "warn");
    EXPECT_EQ(c->log_format, "json");
    EXPECT_EQ(c->io_threads, 3u);
    EXPECT_NO_THROW(c->reject_unknown(setting_catalog()));

    auto e = parse({}, {"SLUICE_DATA_DIR=/from/env", "SLUICE_IO_THREADS=2",
                        "SLUICE_HTTP_LISTENER=off", "SLUICE_LISTENERS=127.0.0.1:7"});
    ASSERT_TRUE(e);
    EXPECT_EQ(e->data_dir, "/from/env");
    EXPECT_EQ(e->io_threads, 2u);
    EXPECT_FALSE(e->http.enabled);
    ASSERT_EQ(e->kafka.size(), 1u);
    EXPECT_EQ(e->kafka[0].where.port, 7);
}

TEST(Config, FlagBeatsVariableBeatsFileBeatsDefault) {
    temp_properties file("num.partitions=2\nlog.retention.hours=5\ndata.dir=/file\n"
                         "io.threads=4\n");
    auto c = parse({"--config", file.path.string(), "--data-dir", "/flag", "--set",
                    "num.partitions=9"},
                   {"SLUICE_NUM_PARTITIONS=3", "SLUICE_LOG_RETENTION_HOURS=6",
                    "SLUICE_DATA_DIR=/env", "SLUICE_IO_THREADS=1"});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->data_dir, "/flag");                          // flag over variable
    EXPECT_EQ(int_of(*c, num_partitions), 9);    // --set over variable
    EXPECT_EQ(int_of(*c, retention_hours), 6);   // variable over file
    EXPECT_EQ(c->io_threads, 1u);                // variable over file
    EXPECT_EQ(int_of(*c, segment_bytes), 1024);  // default
    EXPECT_EQ(c->origin("log.retention.hours"), "SLUICE_LOG_RETENTION_HOURS");
    EXPECT_EQ(c->origin("num.partitions"), "--set");
}

TEST(Config, TheConfigFileCanComeFromTheEnvironment) {
    temp_properties file("num.partitions=4\n");
    auto c = parse({}, {"SLUICE_CONFIG=" + file.path.string()});
    ASSERT_TRUE(c);
    EXPECT_EQ(int_of(*c, num_partitions), 4);
    EXPECT_EQ(c->origin("num.partitions"), file.path.string());
    EXPECT_EQ(error_of({}, {"SLUICE_CONFIG=/nonexistent/sluice.properties"}),
              "--config: no such file /nonexistent/sluice.properties");
}

TEST(Config, ErrorsNameTheVariableOrFileTheValueCameFrom) {
    EXPECT_EQ(error_of({}, {"SLUICE_IO_THREADS=many"}),
              "io.threads (from SLUICE_IO_THREADS): expected a number of threads, got 'many'");
    EXPECT_EQ(error_of({"--io-threads", "many"}),
              "--io-threads: expected a number of threads, got 'many'");
    EXPECT_NE(error_of({}, {"SLUICE_HTTP_LISTENER=nowhere"}).find("SLUICE_HTTP_LISTENER"),
              std::string::npos);

    auto c = parse({}, {"SLUICE_NUM_PARTITIONS=three", "SLUICE_LOG_RETENTION_HOURZ=1"});
    ASSERT_TRUE(c);
    try {
        (void)int_of(*c, num_partitions);
        FAIL() << "a bad value was accepted";
    } catch (const config_error& e) {
        EXPECT_EQ(c->explain(e.what()),
                  "num.partitions (from SLUICE_NUM_PARTITIONS): expected an integer, got 'three'");
    }
}

TEST(Config, AVariableThatNamesNoSettingIsIgnoredWithTheNearestOne) {
    auto c = parse({}, {"SLUICE_NUM_PARTITIONS=2", "SLUICE_LOG_RETENTION_HOURZ=1"});
    ASSERT_TRUE(c);
    std::vector<ignored_variable> ignored;
    ASSERT_NO_THROW(ignored = c->reject_unknown(known_settings()));
    ASSERT_EQ(ignored.size(), 1u);
    EXPECT_EQ(ignored[0].name, "SLUICE_LOG_RETENTION_HOURZ");
    EXPECT_EQ(ignored[0].key, "log.retention.hourz");
    EXPECT_EQ(ignored[0].nearest, "SLUICE_LOG_RETENTION_HOURS");
    EXPECT_EQ(ignored_variables_warning(ignored),
              "ignoring environment variables that name no setting: SLUICE_LOG_RETENTION_HOURZ "
              "(did you mean SLUICE_LOG_RETENTION_HOURS?) (settings: docs/configuration.md)");
}

TEST(Config, KubernetesServiceLinkVariablesAreIgnoredNotFatal) {
    // What a Service named sluice puts into every pod of its namespace.
    auto c = parse({}, {"SLUICE_PORT=tcp://10.96.0.12:9092", "SLUICE_SERVICE_HOST=10.96.0.12",
                        "SLUICE_SERVICE_PORT=9092", "SLUICE_PORT_9092_TCP_ADDR=10.96.0.12",
                        "SLUICE_PORT_9092_TCP_PROTO=tcp", "SLUICE_IO_THREADS=2"});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->io_threads, 2u);
    std::vector<ignored_variable> ignored;
    ASSERT_NO_THROW(ignored = c->reject_unknown(known_settings()));
    std::vector<std::string> names;
    for (const auto& v : ignored) {
        names.push_back(v.name);
        EXPECT_EQ(v.nearest, "") << v.name;
    }
    EXPECT_EQ(names, (std::vector<std::string>{"SLUICE_PORT", "SLUICE_PORT_9092_TCP_ADDR",
                                               "SLUICE_PORT_9092_TCP_PROTO",
                                               "SLUICE_SERVICE_HOST", "SLUICE_SERVICE_PORT"}));
    EXPECT_EQ(ignored_variables_warning(ignored).find("did you mean"), std::string::npos);
}

TEST(Config, AnUnknownKeyFromSetOrTheFileStaysFatalEvenWhenAVariableNamesItToo) {
    auto c = parse({"--set", "not.a.setting=1"}, {"SLUICE_NOT_A_SETTING=2"});
    ASSERT_TRUE(c);
    EXPECT_THROW(c->reject_unknown(known_settings()), config_error);
    temp_properties file("log.retention.hourz=1\n");
    auto f = parse({"--config", file.path.string()});
    ASSERT_TRUE(f);
    try {
        f->reject_unknown(known_settings());
        FAIL() << "a misspelt file key was accepted";
    } catch (const config_error& e) {
        EXPECT_EQ(f->explain(e.what()), "log.retention.hourz (from " + file.path.string() +
                                            "): unknown setting (did you mean "
                                            "log.retention.hours?)");
    }
}

TEST(Config, ScriptVariablesAreNotSettings) {
    auto c = parse({}, {"SLUICE_BIN=/x/sluice", "SLUICE_TEST_SEED=4", "SLUICE_BENCH_DIR=/b",
                        "SLUICE_FAULT_CONTROL=/c", "OTHER=1"});
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->properties.empty());
    EXPECT_NO_THROW(c->reject_unknown(setting_catalog()));
}

TEST(Config, TheLastOfARepeatedFlagWins) {
    auto c = parse({"--data-dir", "a", "--data-dir", "b", "--http", "off", "--http", ":1"});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->data_dir, "b");
    EXPECT_EQ(c->http.port, 1);
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
