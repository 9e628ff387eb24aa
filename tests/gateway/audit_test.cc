#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "gateway/policy/audit.h"
#include "gateway/core/config.h"

namespace sluice::gateway {
namespace {

// 2026-12-03T11:27:09.123Z
const auto at = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796297229123));

const audit_source alice{"User:alice", "127.0.0.1:5555", "kafka"};

std::filesystem::path temp_dir(const std::string& name) {
    auto dir = std::filesystem::temp_directory_path() /
               ("sluice-audit-test-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

std::string read_all(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST(AuditEvent, CommonFieldsFirstThenTheEventsInCallOrder) {
    audit_event e(audit_event_kind::authorization_denied, alice);
    e.field("operation", "WRITE").field("resource_type", "TOPIC").field("resource_name", "t");
    EXPECT_EQ(e.line(at),
              R"({"time":"2026-12-03T11:27:09.123Z","event":"authorization_denied",)"
              R"("principal":"User:alice","client":"127.0.0.1:5555","front":"kafka",)"
              R"("operation":"WRITE","resource_type":"TOPIC","resource_name":"t"})");
}

TEST(AuditEvent, QuotesBackslashesAndControlCharactersAreEscaped) {
    const audit_source odd{"User:a\"b\\c", "local", "cli"};
    audit_event e(audit_event_kind::user_changed, odd);
    e.field("user", std::string("x\ny\tz\x01\x7f\0", 8));
    const auto line = e.line(at);
    EXPECT_NE(line.find(R"("principal":"User:a\"b\\c")"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("user":"x\ny\tz\u0001\u007f\u0000"})"), std::string::npos) << line;
}

TEST(AuditEvent, Utf8IsKeptAndOtherBytesBecomeTheReplacementCharacter) {
    audit_event e(audit_event_kind::authorization_denied, alice);
    e.field("resource_name", "caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80")
        .field("bad", "a\xff" "b\xc3" "c\xed\xa0\x80");
    const auto line = e.line(at);
    EXPECT_NE(line.find("\"resource_name\":\"caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x98\x80\""),
              std::string::npos)
        << line;
    EXPECT_NE(line.find(R"("bad":"a\ufffdb\ufffdc\ufffd\ufffd\ufffd")"), std::string::npos)
        << line;
}

TEST(AuditEvent, ListsAreJsonArrays) {
    audit_event e(audit_event_kind::user_changed, alice);
    e.list("mechanisms", {"PLAIN", "SCRAM-SHA-256"}).list("none", {});
    EXPECT_NE(e.line(at).find(R"("mechanisms":["PLAIN","SCRAM-SHA-256"],"none":[]})"),
              std::string::npos);
}

TEST(AuditEvent, SecretLikeKeysAreRecognisedInAnyCase) {
    EXPECT_TRUE(secret_like_key("sasl.jaas.password"));
    EXPECT_TRUE(secret_like_key("ssl.KEY.location"));
    EXPECT_TRUE(secret_like_key("aws.Secret"));
    EXPECT_TRUE(secret_like_key("token.endpoint"));
    EXPECT_FALSE(secret_like_key("retention.ms"));
    EXPECT_FALSE(secret_like_key("cleanup.policy"));
}

TEST(AuditSettings, DefaultsToTheDataDir) {
    config cfg;
    cfg.data_dir = "/var/lib/sluice";
    const auto s = read_audit_settings(cfg);
    EXPECT_EQ(s.path, "/var/lib/sluice/audit.log");
    EXPECT_EQ(s.max_bytes, 104857600);
    EXPECT_EQ(s.files, 5);
}

TEST(AuditSettings, PathSizeAndCountAreRead) {
    config cfg;
    cfg.properties["audit.log"] = "/tmp/a.log";
    cfg.properties["audit.log.max.bytes"] = "4096";
    cfg.properties["audit.log.files"] = "3";
    const auto s = read_audit_settings(cfg);
    EXPECT_EQ(s.path, "/tmp/a.log");
    EXPECT_EQ(s.max_bytes, 4096);
    EXPECT_EQ(s.files, 3);
}

TEST(AuditSettings, OffAndEmptyDisable) {
    config cfg;
    cfg.properties["audit.log"] = "off";
    EXPECT_TRUE(read_audit_settings(cfg).path.empty());
    cfg.properties["audit.log"] = "";
    EXPECT_TRUE(read_audit_settings(cfg).path.empty());
}

TEST(AuditSettings, BadValuesAreClearErrors) {
    config cfg;
    cfg.properties["audit.log.max.bytes"] = "10";
    EXPECT_THROW(read_audit_settings(cfg), config_error);
    cfg.properties["audit.log.max.bytes"] = "lots";
    EXPECT_THROW(read_audit_settings(cfg), config_error);
    cfg.properties.erase("audit.log.max.bytes");
    cfg.properties["audit.log.files"] = "0";
    EXPECT_THROW(read_audit_settings(cfg), config_error);
}

TEST(AuditLog, DisabledWritesNothing) {
    const auto dir = temp_dir("off");
    audit_settings s;  // no path: off
    audit_log log(s, false);
    EXPECT_FALSE(log.enabled());
    const scoped_audit_log installed(log);
    audit_authentication_failed(alice, "PLAIN", "alice", "wrong password");
    EXPECT_EQ(log.events(audit_event_kind::authentication_failed), 0u);
    EXPECT_TRUE(std::filesystem::is_empty(dir));
}

TEST(AuditLog, WritesOneLinePerEventAndRedactsSecretValues) {
    const auto dir = temp_dir("on");
    audit_settings s;
    s.path = (dir / "audit.log").string();
    {
        audit_log log(s, false);
        const scoped_audit_log installed(log);
        audit_config_changed(alice, "topic:t",
                             {{"retention.ms", "set", "1000"},
                              {"sasl.password", "set", "hunter2"},
                              {"cleanup.policy", "delete", std::nullopt}});
        audit_authentication_failed(alice, "SCRAM-SHA-256", "bob", "wrong password");
        EXPECT_EQ(log.events(audit_event_kind::config_changed), 1u);
    }
    const auto text = read_all(dir / "audit.log");
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
    EXPECT_NE(text.find(R"("resource":"topic:t","changes":[{"key":"retention.ms","op":"set",)"
                        R"("value":"1000"},{"key":"sasl.password","op":"set",)"
                        R"("value":"<redacted>"},{"key":"cleanup.policy","op":"delete"}]})"),
              std::string::npos)
        << text;
    EXPECT_EQ(text.find("hunter2"), std::string::npos);
    EXPECT_NE(text.find(R"("mechanism":"SCRAM-SHA-256","user":"bob","reason":"wrong password"})"),
              std::string::npos)
        << text;
}

TEST(AuditLog, AsynchronousLogReachesTheFileByItsEnd) {
    const auto dir = temp_dir("async");
    audit_settings s;
    s.path = (dir / "audit.log").string();
    {
        audit_log log(s, true);
        const scoped_audit_log installed(log);
        for (int i = 0; i < 100; ++i) {
            audit_authorization_denied(alice, auth::acl_operation::write,
                                       auth::resource_type::topic, "t" + std::to_string(i),
                                       "Produce");
        }
    }
    const auto text = read_all(dir / "audit.log");
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 100);
    EXPECT_NE(text.find(R"("resource_name":"t99","api":"Produce"})"), std::string::npos);
}

TEST(AuditLog, FileThatCannotBeOpenedIsAConfigError) {
    audit_settings s;
    s.path = "/proc/sluice-no-such-dir/audit.log";
    EXPECT_THROW(audit_log(s, false), config_error);
}

TEST(AuditLog, HttpFrontsAreNamedByRoute) {
    EXPECT_EQ(http_front_of("/ws"), "websocket");
    EXPECT_EQ(http_front_of("/topics/{topic}/events"), "sse");
    EXPECT_EQ(http_front_of("/topics/{topic}"), "http");
}

}  // namespace
}  // namespace sluice::gateway
