#include "gateway/core/logging.h"

#include <chrono>
#include <ctime>

#include <fmt/format.h>
#include <spdlog/details/registry.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include "gateway/core/config.h"

namespace sluice::gateway {
namespace {

constexpr const char* level_names[] = {"trace", "debug", "info", "warn", "error", "off"};

std::string checked_level(const std::string& level, const std::string& what) {
    for (const char* l : level_names) {
        if (level == l) {
            return level;
        }
    }
    throw config_error("--log-level: unknown level '" + level + "'" + what +
                       " (trace, debug, info, warn, error, off)");
}

/// The length of the valid UTF-8 sequence at the start of `s` (RFC 3629: no overlong forms,
/// no surrogates, nothing above U+10FFFF), or 0 when it is not one.
std::size_t utf8_sequence_length(std::string_view s) {
    const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
    const auto cont = [&](std::size_t i, unsigned char lo, unsigned char hi) {
        return i < s.size() && b(i) >= lo && b(i) <= hi;
    };
    const unsigned char c = b(0);
    if (c >= 0xc2 && c <= 0xdf) {
        return cont(1, 0x80, 0xbf) ? 2 : 0;
    }
    if (c >= 0xe0 && c <= 0xef) {
        const unsigned char lo = c == 0xe0 ? 0xa0 : 0x80;
        const unsigned char hi = c == 0xed ? 0x9f : 0xbf;
        return cont(1, lo, hi) && cont(2, 0x80, 0xbf) ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        const unsigned char lo = c == 0xf0 ? 0x90 : 0x80;
        const unsigned char hi = c == 0xf4 ? 0x8f : 0xbf;
        return cont(1, lo, hi) && cont(2, 0x80, 0xbf) && cont(3, 0x80, 0xbf) ? 4 : 0;
    }
    return 0;
}

template <typename Buffer>
void append_json_string_to(Buffer& out, std::string_view s) {
    out.push_back('"');
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        switch (c) {
            case '"': out.append(std::string_view("\\\"")); break;
            case '\\': out.append(std::string_view("\\\\")); break;
            case '\n': out.append(std::string_view("\\n")); break;
            case '\r': out.append(std::string_view("\\r")); break;
            case '\t': out.append(std::string_view("\\t")); break;
            default:
                if (c < 0x20 || c == 0x7f) {
                    fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
                } else if (c < 0x80) {
                    out.push_back(s[i]);
                } else if (const auto n = utf8_sequence_length(s.substr(i)); n > 0) {
                    out.append(s.substr(i, n));
                    i += n - 1;
                } else {
                    // Not UTF-8 (a client's bytes): the replacement character keeps the line
                    // valid JSON.
                    out.append(std::string_view("\\ufffd"));
                }
        }
    }
    out.push_back('"');
}

void append_json_string(spdlog::memory_buf_t& out, std::string_view s) {
    append_json_string_to(out, s);
}

class json_formatter final : public spdlog::formatter {
public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        using namespace std::chrono;
        const auto t = system_clock::to_time_t(msg.time);
        std::tm utc{};
        gmtime_r(&t, &utc);
        const auto ms = duration_cast<milliseconds>(msg.time.time_since_epoch()).count() % 1000;
        fmt::format_to(std::back_inserter(dest),
                       "{{\"time\":\"{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z\",\"level\":",
                       utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                       utc.tm_sec, ms);
        const auto level = spdlog::level::to_string_view(msg.level);
        append_json_string(dest, std::string_view(level.data(), level.size()));
        dest.append(std::string_view(",\"logger\":"));
        append_json_string(dest, std::string_view(msg.logger_name.data(), msg.logger_name.size()));
        dest.append(std::string_view(",\"message\":"));
        append_json_string(dest, std::string_view(msg.payload.data(), msg.payload.size()));
        if (!msg.source.empty()) {
            fmt::format_to(std::back_inserter(dest), ",\"source\":\"{}:{}\"", msg.source.filename,
                           msg.source.line);
        }
        dest.append(std::string_view("}\n"));
    }

    std::unique_ptr<spdlog::formatter> clone() const override {
        return std::make_unique<json_formatter>();
    }
};

}  // namespace

void append_json_string(std::string& out, std::string_view s) { append_json_string_to(out, s); }

const std::map<std::string, std::string>& log_areas() {
    static const std::map<std::string, std::string> areas = {
        {"server", "start-up, listeners, shutdown"},
        {"storage", "the log: segments, recovery, retention, compaction, fsync"},
        {"group", "consumer groups and offsets"},
        {"producer", "idempotent producer state"},
        {"txn", "transactions"},
        {"kafka", "the Kafka front"},
        {"http", "the HTTP front: REST, WebSocket, SSE"},
        {"sqs", "the SQS front"},
        {"queue", "SQS queues on the log"},
        {"auth", "authentication and authorization"},
        {"upstream", "upstream mode: the Kafka cluster behind the gateway, librdkafka's own "
                     "lines (at debug also its broker, topic, metadata, cgrp and fetch "
                     "debugging; at trace all of it)"},
    };
    return areas;
}

log_levels parse_log_levels(const std::string& text) {
    log_levels out;
    bool have_all = false;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(',', start);
        if (end == std::string::npos) {
            end = text.size();
        }
        const std::string item = text.substr(start, end - start);
        start = end + 1;
        if (item.empty()) {
            throw config_error("--log-level: empty entry in '" + text + "'");
        }
        const auto eq = item.find('=');
        if (eq == std::string::npos) {
            if (have_all) {
                throw config_error("--log-level: two levels for every area in '" + text + "'");
            }
            out.all = checked_level(item, "");
            have_all = true;
            continue;
        }
        const std::string area = item.substr(0, eq);
        if (log_areas().count(area) == 0) {
            std::string nearest;
            std::size_t best = 3;
            for (const auto& [name, _] : log_areas()) {
                if (const auto d = edit_distance(area, name); d < best) {
                    best = d;
                    nearest = name;
                }
            }
            std::string known;
            for (const auto& [name, _] : log_areas()) {
                known += (known.empty() ? "" : ", ") + name;
            }
            throw config_error("--log-level: unknown area '" + area + "'" +
                               (nearest.empty() ? "" : " (did you mean " + nearest + "?)") +
                               "; the areas are " + known);
        }
        out.areas[area] = checked_level(item.substr(eq + 1), " for " + area);
    }
    return out;
}

log_format parse_log_format(const std::string& text) {
    if (text == "text") {
        return log_format::text;
    }
    if (text == "json") {
        return log_format::json;
    }
    throw config_error("--log-format: expected text or json, got '" + text + "'");
}

std::unique_ptr<spdlog::formatter> make_json_formatter() {
    return std::make_unique<json_formatter>();
}

void configure_logging(const log_levels& levels, log_format format) {
    if (format == log_format::json) {
        spdlog::set_formatter(make_json_formatter());
    } else {
        spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%n] %v");
    }
    spdlog::details::registry::log_levels per_area;
    for (const auto& [area, level] : levels.areas) {
        per_area[area] = spdlog::level::from_str(level);
    }
    auto all = spdlog::level::from_str(levels.all);
    // Existing loggers take their level now; loggers created later take it at creation.
    spdlog::details::registry::instance().set_levels(std::move(per_area), &all);
}

}  // namespace sluice::gateway
