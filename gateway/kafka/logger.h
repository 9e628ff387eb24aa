// The "kafka" logger: connection lifecycle and per-request decisions of the Kafka front.
#pragma once

#include "backend/api/logger.h"

namespace sluice::gateway {

inline spdlog::logger& kafka_log() {
    static spdlog::logger& l = named_logger("kafka");
    return l;
}

}  // namespace sluice::gateway
