// Named spdlog loggers, one per area ("storage", "group", "producer", "kafka", "http", ...),
// shared by every module (owned by backend/api, the lowest module that logs). Loggers are
// created on first use with the process-wide level and pattern that main sets.
#pragma once

#include <string_view>

#include <spdlog/spdlog.h>

namespace sluice {

/// The logger called `name`, created on first use. Thread-safe.
spdlog::logger& named_logger(std::string_view name);

}  // namespace sluice
