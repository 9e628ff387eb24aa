// The "proxy" logger: the Kafka port in upstream mode (gateway/proxy): the upstream's broker
// list and the node ports that follow it, and client connections that end on an upstream
// failure.
#pragma once

#include "gateway/core/logger.h"

namespace sluice::gateway::proxy {

inline spdlog::logger& proxy_log() {
    static spdlog::logger& l = named_logger("proxy");
    return l;
}

}  // namespace sluice::gateway::proxy
