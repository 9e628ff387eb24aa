// The "sqs" logger: listener lifecycle and per-request decisions of the SQS front.
#pragma once

#include "backend/api/logger.h"

namespace sluice::gateway {

inline spdlog::logger& sqs_log() {
    static spdlog::logger& l = named_logger("sqs");
    return l;
}

}  // namespace sluice::gateway
