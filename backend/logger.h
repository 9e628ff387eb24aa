// Named spdlog loggers, one per area ("storage", "group", "producer", "kafka", "http", ...).
// Loggers are created on first use with the process-wide level and pattern that main sets.
#pragma once

#include <string_view>

#include <spdlog/spdlog.h>

namespace sluice {

/// The logger called `name`, created on first use. Thread-safe.
spdlog::logger& named_logger(std::string_view name);

}  // namespace sluice

namespace sluice::backend {

inline spdlog::logger& storage_log() {
    static spdlog::logger& l = named_logger("storage");
    return l;
}
inline spdlog::logger& group_log() {
    static spdlog::logger& l = named_logger("group");
    return l;
}
inline spdlog::logger& producer_log() {
    static spdlog::logger& l = named_logger("producer");
    return l;
}

}  // namespace sluice::backend
