// The loggers of the process as a whole: "server" (start-up, listeners, connections, shutdown)
// and "auth" (authentication outcomes on every front and in TLS handshakes: failures at warn,
// successes at debug; authorization denials).
#pragma once

#include "backend/api/logger.h"

namespace sluice::gateway {

inline spdlog::logger& server_log() {
    static spdlog::logger& l = named_logger("server");
    return l;
}

inline spdlog::logger& auth_log() {
    static spdlog::logger& l = named_logger("auth");
    return l;
}

}  // namespace sluice::gateway
