// The backend's figures on /metrics (metrics_registry collectors): every partition's offsets,
// size and traffic (bytes and records in, bytes out, counted by every front), the fetches
// parked waiting for data, and every consumer group's lag. Read through backend/api only.
#pragma once

#include <string>

#include "backend/api/groups.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"

namespace sluice::gateway {

/// Appends the partition metrics in the Prometheus text format.
void render_partition_metrics(const backend::api::topics& topics,
                              const backend::api::records& records, std::string& out);

}  // namespace sluice::gateway
