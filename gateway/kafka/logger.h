// The "kafka" logger: connection lifecycle and per-request decisions of the Kafka front.
#pragma once

#include "backend/api/logger.h"

namespace sluice::gateway {

inline spdlog::logger& kafka_log() {
    static spdlog::logger& l = named_logger("kafka");
    return l;
}

inline spdlog::logger& server_log() {
    static spdlog::logger& l = named_logger("server");
    return l;
}

/// Authentication outcomes on every front (failures at warn, successes at debug).
inline spdlog::logger& auth_log() {
    static spdlog::logger& l = named_logger("auth");
    return l;
}

inline spdlog::logger& http_log() {
    static spdlog::logger& l = named_logger("http");
    return l;
}

}  // namespace sluice::gateway
