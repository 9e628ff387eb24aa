#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <spdlog/details/log_msg.h>

#include "gateway/core/config.h"
#include "gateway/core/logging.h"

namespace sluice::gateway {
namespace {

std::string error_of(const std::string& text) {
    try {
        parse_log_levels(text);
    } catch (const config_error& e) {
        return e.what();
    }
    return "";
}

TEST(LogLevels, OneLevelForEveryArea) {
    auto l = parse_log_levels("debug");
    EXPECT_EQ(l.all, "debug");
    EXPECT_TRUE(l.areas.empty());
}

TEST(LogLevels, AreasWithTheirOwnLevelBesideTheDefault) {
    auto l = parse_log_levels("warn,storage=debug,sqs=trace");
    EXPECT_EQ(l.all, "warn");
    EXPECT_EQ(l.areas.at("storage"), "debug");
    EXPECT_EQ(l.areas.at("sqs"), "trace");
    auto only = parse_log_levels("kafka=error");
    EXPECT_EQ(only.all, "info");
    EXPECT_EQ(only.areas.at("kafka"), "error");
}

TEST(LogLevels, BadLevelsAndAreasAreOneClearError) {
    EXPECT_NE(error_of("loud").find("unknown level 'loud'"), std::string::npos);
    EXPECT_NE(error_of("info,storage=chatty").find("'chatty' for storage"), std::string::npos);
    const auto typo = error_of("info,storag=debug");
    EXPECT_NE(typo.find("unknown area 'storag'"), std::string::npos) << typo;
    EXPECT_NE(typo.find("did you mean storage?"), std::string::npos) << typo;
    EXPECT_NE(error_of("zzzzzzzz=debug").find("the areas are"), std::string::npos);
    EXPECT_NE(error_of("info,,kafka=debug").find("empty entry"), std::string::npos);
    EXPECT_NE(error_of("info,debug").find("two levels"), std::string::npos);
    EXPECT_EQ(error_of("off"), "");
}

TEST(LogFormat, TextOrJson) {
    EXPECT_EQ(parse_log_format("text"), log_format::text);
    EXPECT_EQ(parse_log_format("json"), log_format::json);
    EXPECT_THROW(parse_log_format("xml"), config_error);
}

TEST(JsonLogFormatter, OneObjectPerLineWithTheMessageEscaped) {
    auto f = make_json_formatter();
    const std::string text = "say \"hi\"\\ to\nall\t\x01";
    spdlog::details::log_msg msg(spdlog::source_loc{}, "storage", spdlog::level::warn, text);
    msg.time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1796184000123));
    spdlog::memory_buf_t out;
    f->format(msg, out);
    EXPECT_EQ(std::string(out.data(), out.size()),
              "{\"time\":\"2026-12-02T04:00:00.123Z\",\"level\":\"warning\",\"logger\":\"storage\","
              "\"message\":\"say \\\"hi\\\"\\\\ to\\nall\\t\\u0001\"}\n");
}

TEST(ConfigLogFlags, AreCheckedWhenTheCommandLineIsRead) {
    std::string prog = "sluice", flag = "--log-level", bad = "info,strage=debug";
    char* argv[] = {prog.data(), flag.data(), bad.data()};
    EXPECT_THROW(parse_command_line(3, argv), config_error);
    std::string fflag = "--log-format", json = "json";
    char* ok[] = {prog.data(), fflag.data(), json.data()};
    auto c = parse_command_line(3, ok);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->log_format, "json");
}

}  // namespace
}  // namespace sluice::gateway
