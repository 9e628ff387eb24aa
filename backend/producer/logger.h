// The transaction coordinator's logger ("txn"); producer-state code uses producer_log() from
// backend/logger.h.
#pragma once

#include "backend/logger.h"

namespace sluice::backend::producer {

inline spdlog::logger& txn_log() {
    static spdlog::logger& l = named_logger("txn");
    return l;
}

}  // namespace sluice::backend::producer
