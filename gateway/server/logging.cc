#include "gateway/server/logging.h"

#include <chrono>
#include <ctime>

#include <fmt/format.h>
#include <spdlog/details/registry.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/spdlog.h>

#include "gateway/server/config.h"

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

void append_json_string(spdlog::memory_buf_t& out, std::string_view s) {
    out.push_back('"');
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        switch (c) {
            case '"': out.append(std::string_view("\\\"")); break;
            case '\\': out.append(std::string_view("\\\\")); break;
            case '\n': out.append(std::string_view("\\n")); break;
            case '\r': out.append(std::string_view("\\r")); break;
            case '\t': out.append(std::string_view("\\t")); break;
            default:
                if (c < 0x20) {
                    fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
                } else {
                    out.push_back(ch);
                }
        }
    }
    out.push_back('"');
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
