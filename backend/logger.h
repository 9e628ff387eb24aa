// The loggers of the native backend's modules ("storage", "group", "producer", "queue").
#pragma once

#include "backend/api/logger.h"

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

inline spdlog::logger& queue_log() {
    static spdlog::logger& l = named_logger("queue");
    return l;
}

}  // namespace sluice::backend
