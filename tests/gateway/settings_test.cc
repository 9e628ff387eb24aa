// The declared-settings machinery (gateway/core/settings.h): typed getters with defaults,
// ranges, units and aliases; errors that name the setting and where its value came from; the
// SLUICE_ variable of every declared name; unknown names told apart by the catalog; what the
// tables print (--help, the doc's tables).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gateway/core/config.h"
#include "gateway/core/settings.h"

namespace sluice::gateway {
namespace {

constexpr setting partitions{.name = "num.partitions", .type = setting_type::integer,
                             .default_value = "1", .doc = "partitions", .min = 1,
                             .max = 1000};
constexpr setting queued_bytes{.name = "queued.max.request.bytes",
                               .type = setting_type::integer, .default_value = "268435456",
                               .doc = "bytes queued", .unit = setting_unit::bytes, .min = -1,
                               .range = "-1 (no bound) or a positive size",
                               .zero_allowed = false};
constexpr setting retention{.name = "offsets.retention.minutes", .type = setting_type::integer,
                            .default_value = "10080", .doc = "minutes",
                            .unit = setting_unit::minutes, .min = 1};
constexpr setting enabled{.name = "delete.topic.enable", .type = setting_type::boolean,
                          .default_value = "true", .doc = "allow DeleteTopics"};
constexpr setting assignors{.name = "group.consumer.assignors", .type = setting_type::list,
                            .default_value = "uniform,range", .doc = "assignors"};
constexpr setting node_id{.name = "node.id", .type = setting_type::integer,
                          .default_value = "0", .doc = "id", .min = 0,
                          .alias = "broker.id"};
constexpr setting key_location{.name = "ssl.key.location", .doc = "key"};
constexpr setting test_settings[] = {partitions, queued_bytes, retention, enabled, assignors,
                                     node_id};
constexpr setting test_tls[] = {key_location};
constexpr std::string_view listener_names[] = {"ssl", "https"};

setting_catalog test_catalog() {
    setting_catalog c;
    c.add(core_setting_table());
    c.add(setting_table{.module = "test", .title = "Test", .settings = test_settings});
    c.add(setting_table{.module = "tls", .title = "TLS", .settings = test_tls,
                        .prefix = "listener.name.<name>.", .prefix_names = listener_names});
    return c;
}

config with(std::map<std::string, std::string> props,
            std::map<std::string, std::string> sources = {}) {
    config c;
    c.properties = std::move(props);
    c.sources = std::move(sources);
    return c;
}

std::string error_of(const config& c, const setting& s) {
    try {
        (void)config_values(c).get_int(s);
    } catch (const config_error& e) {
        return e.what();
    }
    return "";
}

std::optional<config> parse_config(std::vector<std::string> args, std::vector<std::string> env) {
    std::vector<char*> argv;
    static std::string prog = "sluice";
    argv.push_back(prog.data());
    for (auto& a : args) {
        argv.push_back(a.data());
    }
    return parse_command_line(static_cast<int>(argv.size()), argv.data(), env);
}

TEST(Settings, UnsetSettingsHaveTheirDeclaredDefaults) {
    const config c;
    const config_values v(c);
    EXPECT_EQ(v.get_int(partitions), 1);
    EXPECT_TRUE(v.get_bool(enabled));
    EXPECT_EQ(v.get_list(assignors), (std::vector<std::string>{"uniform", "range"}));
    EXPECT_EQ(v.get_string(key_location), "");
    EXPECT_FALSE(v.is_set(partitions));
}

TEST(Settings, GivenValuesAreParsedByType) {
    const config c = with({{"num.partitions", "7"},
                           {"delete.topic.enable", "false"},
                           {"group.consumer.assignors", " range ,, uniform "}});
    const config_values v(c);
    EXPECT_EQ(v.get_int(partitions), 7);
    EXPECT_FALSE(v.get_bool(enabled));
    EXPECT_EQ(v.get_list(assignors), (std::vector<std::string>{"range", "uniform"}));
    EXPECT_TRUE(v.is_set(partitions));
}

TEST(Settings, TimeUnitsBecomeMilliseconds) {
    const config c = with({{"offsets.retention.minutes", "2"}});
    EXPECT_EQ(config_values(c).get_ms(retention), std::chrono::milliseconds(120000));
}

TEST(Settings, AValueOutOfRangeNamesTheSettingAndTheRange) {
    EXPECT_EQ(error_of(with({{"num.partitions", "0"}}), partitions),
              "num.partitions: must be between 1 and 1000");
    EXPECT_EQ(error_of(with({{"offsets.retention.minutes", "0"}}), retention),
              "offsets.retention.minutes: must be at least 1");
    EXPECT_EQ(error_of(with({{"queued.max.request.bytes", "0"}}), queued_bytes),
              "queued.max.request.bytes: must be -1 (no bound) or a positive size");
    EXPECT_EQ(error_of(with({{"queued.max.request.bytes", "-1"}}), queued_bytes), "");
}

TEST(Settings, ABadValueNamesWhereItCameFrom) {
    EXPECT_EQ(error_of(with({{"num.partitions", "three"}},
                            {{"num.partitions", "SLUICE_NUM_PARTITIONS"}}),
                       partitions),
              "num.partitions (from SLUICE_NUM_PARTITIONS): expected an integer, got 'three'");
    EXPECT_EQ(error_of(with({{"num.partitions", "0"}},
                            {{"num.partitions", "/etc/sluice.properties"}}),
                       partitions),
              "num.partitions (from /etc/sluice.properties): must be between 1 and 1000");
    EXPECT_EQ(error_of(with({{"num.partitions", "x"}}, {{"num.partitions", "--set"}}),
                       partitions),
              "num.partitions: expected an integer, got 'x'");
    const config b = with({{"delete.topic.enable", "yes"}});
    EXPECT_THROW((void)config_values(b).get_bool(enabled), config_error);
}

TEST(Settings, AnAliasIsReadWhenTheNameIsNotSet) {
    EXPECT_EQ(config_values(with({{"broker.id", "3"}})).get_int(node_id), 3);
    EXPECT_EQ(config_values(with({{"broker.id", "3"}, {"node.id", "4"}})).get_int(node_id), 4);
    EXPECT_EQ(error_of(with({{"broker.id", "-2"}}), node_id), "broker.id: must be at least 0");
}

TEST(Settings, ThePrefixedNameWinsOverThePlainOne) {
    const config c = with({{"ssl.key.location", "/plain"},
                           {"listener.name.https.ssl.key.location", "/https"}});
    const config_values v(c);
    EXPECT_EQ(v.get_string(key_location, "listener.name.https."), "/https");
    EXPECT_EQ(v.get_string(key_location, "listener.name.ssl."), "/plain");
}

TEST(Settings, TheCatalogKnowsNamesAliasesAndPrefixedNames) {
    const auto c = test_catalog();
    EXPECT_TRUE(c.known("num.partitions"));
    EXPECT_TRUE(c.known("broker.id"));
    EXPECT_TRUE(c.known("data.dir"));
    EXPECT_TRUE(c.known("listener.name.https.ssl.key.location"));
    EXPECT_FALSE(c.known("listener.name.other.ssl.key.location"));
    EXPECT_FALSE(c.known("listener.name.https.num.partitions"));
    EXPECT_FALSE(c.known("num.partition"));
}

TEST(Settings, EveryDeclaredNameHasAVariableThatMapsBack) {
    const auto catalog = test_catalog();  // a named catalog: tables() refers into it
    for (const auto& t : catalog.tables()) {
        for (const auto& s : t.settings) {
            EXPECT_EQ(variable_to_setting(setting_to_variable(s.name)), std::string(s.name));
        }
    }
}

TEST(Settings, ADeclaredVariableIsReadAndAnUnknownOneReportedNotFatal) {
    auto c = parse_config(
        {}, {"SLUICE_NUM_PARTITIONS=5", "SLUICE_NUM_PARTITONS=6", "SLUICE_PORT=tcp://x"});
    ASSERT_TRUE(c);
    EXPECT_EQ(config_values(*c).get_int(partitions), 5);
    std::vector<ignored_variable> ignored;
    ASSERT_NO_THROW(ignored = c->reject_unknown(test_catalog()));
    ASSERT_EQ(ignored.size(), 2u);
    EXPECT_EQ(ignored[0].name, "SLUICE_NUM_PARTITONS");
    EXPECT_EQ(ignored[0].nearest, "SLUICE_NUM_PARTITIONS");
    EXPECT_EQ(ignored[1].name, "SLUICE_PORT");
}

TEST(Settings, AnUnknownKeyFromTheFileOrSetIsFatal) {
    auto c = parse_config({"--set", "num.partitons=2"}, {});
    ASSERT_TRUE(c);
    try {
        c->reject_unknown(test_catalog());
        FAIL() << "a misspelt setting was accepted";
    } catch (const config_error& e) {
        EXPECT_EQ(std::string(e.what()),
                  "num.partitons: unknown setting (did you mean num.partitions?)");
    }
}

TEST(Settings, TheDocTableShowsDefaultsValuesAndUnits) {
    const std::string md = settings_markdown(
        setting_table{.module = "test", .title = "Test", .settings = test_settings});
    EXPECT_NE(md.find("| `num.partitions` | `1` | 1 to 1000 | partitions |"), std::string::npos)
        << md;
    EXPECT_NE(md.find("| `queued.max.request.bytes` | `268435456` (256 MiB) | -1 (no bound) or a "
                      "positive size, bytes | bytes queued |"),
              std::string::npos)
        << md;
    EXPECT_NE(md.find("| `node.id` (`broker.id`) |"), std::string::npos) << md;
}

TEST(Settings, TheDocIsRegeneratedBetweenItsMarkersOnly) {
    setting_catalog one;
    one.add(setting_table{.module = "test", .title = "Test", .settings = test_settings});
    const std::string doc = "# Title\n\nprose before\n<!-- settings:test -->\nold table\n"
                            "<!-- /settings:test -->\nprose after\n";
    std::vector<std::string> stale;
    const std::string fresh = regenerate_settings_doc(doc, one, &stale);
    EXPECT_EQ(stale, std::vector<std::string>{"test"});
    EXPECT_TRUE(fresh.starts_with("# Title\n\nprose before\n<!-- settings:test -->\n| setting |"));
    EXPECT_TRUE(fresh.ends_with("|\n<!-- /settings:test -->\nprose after\n"));
    stale.clear();
    EXPECT_EQ(regenerate_settings_doc(fresh, one, &stale), fresh);
    EXPECT_TRUE(stale.empty());
    EXPECT_THROW(regenerate_settings_doc("no markers\n", one), config_error);
}

TEST(Settings, TheCheckNamesTheCommandThatRegeneratesTheDoc) {
    setting_catalog one;
    one.add(setting_table{.module = "test", .title = "Test", .settings = test_settings});
    const auto path = std::filesystem::temp_directory_path() /
                      ("sluice-settings-" + std::to_string(::getpid()) + ".md");
    std::ofstream(path) << "<!-- settings:test -->\nold\n<!-- /settings:test -->\n";
    std::ostringstream out;
    std::ostringstream err;
    EXPECT_EQ(run_settings_command({"--check-doc", path.string()}, one, out, err), 1);
    EXPECT_NE(err.str().find("sluice settings --update-doc " + path.string()),
              std::string::npos);
    EXPECT_EQ(run_settings_command({"--update-doc", path.string()}, one, out, err), 0);
    EXPECT_EQ(run_settings_command({"--check-doc", path.string()}, one, out, err), 0);
    std::filesystem::remove(path);
}

TEST(Settings, HelpListsEverySettingWithItsDefault) {
    const std::string help = settings_help_text(test_catalog());
    EXPECT_NE(help.find("num.partitions=1 (1 to 1000)"), std::string::npos) << help;
    EXPECT_NE(help.find("data.dir=./data"), std::string::npos) << help;
    EXPECT_NE(help.find("listener.name.<name>.KEY"), std::string::npos) << help;
}

}  // namespace
}  // namespace sluice::gateway
