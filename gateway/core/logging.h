// How sluice logs: the level of each area's logger and the line format, from --log-level and
// --log-format, set up once in run_server before anything logs.
//
//   --log-level info                       every area at info
//   --log-level warn,storage=debug,sqs=info   warn, except the two areas named
//   --log-format json                      one JSON object per line:
//       {"time":"2026-12-02T04:05:06.789Z","level":"info","logger":"storage","message":"..."}
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <spdlog/formatter.h>

namespace sluice::gateway {

enum class log_format { text, json };

struct log_levels {
    std::string all = "info";
    /// Areas with a level of their own ("storage" -> "debug").
    std::map<std::string, std::string> areas;
};

/// The areas sluice logs under (the names of its loggers).
const std::map<std::string, std::string>& log_areas();

/// Parses --log-level's value. Throws config_error naming a bad level or an unknown area (and
/// the nearest area when one is close).
log_levels parse_log_levels(const std::string& text);

/// Parses --log-format's value (text or json). Throws config_error.
log_format parse_log_format(const std::string& text);

/// A formatter writing one JSON object per line (time in UTC, level, logger, message, and the
/// source location when the call gave one), strings escaped as JSON needs.
std::unique_ptr<spdlog::formatter> make_json_formatter();

/// Appends `s` as a JSON string (quoted; quotes, backslashes and control characters escaped,
/// UTF-8 kept, bytes that are not UTF-8 as U+FFFD): the escaping of the JSON log lines and of
/// the audit log (gateway/policy/audit.h).
void append_json_string(std::string& out, std::string_view s);

/// Applies the levels and the format to the loggers that exist and to those created later.
void configure_logging(const log_levels& levels, log_format format);

}  // namespace sluice::gateway
