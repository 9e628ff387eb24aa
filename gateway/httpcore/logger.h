// The "http" logger: connections and requests of the HTTP/1.1 core and the REST, WebSocket and SSE fronts.
#pragma once

#include "backend/api/logger.h"

namespace sluice::gateway {

inline spdlog::logger& http_log() {
    static spdlog::logger& l = named_logger("http");
    return l;
}

}  // namespace sluice::gateway
