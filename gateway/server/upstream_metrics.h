// What /metrics shows in upstream mode (owned by gateway/server): the client level's
// statistics (librdkafka's, per handle and broker) as Prometheus lines. The native mode shows
// nothing of these.
#pragma once

#include <string>

#include "backend/api/client.h"

namespace sluice::gateway {

/// Appends, with # HELP and # TYPE, per librdkafka handle and broker:
/// sluice_upstream_broker_up{handle,broker,node_id} (1: the connection is UP),
/// sluice_upstream_broker_rtt_seconds{handle,broker,node_id,quantile} (0.5: librdkafka's
/// average round trip, 0.99: its p99), sluice_upstream_broker_throttle_seconds (the average
/// throttle time the broker asked for), sluice_upstream_requests_total and
/// sluice_upstream_request_errors_total; per handle sluice_upstream_queued_messages; and
/// sluice_upstream_call_errors_total{error} (calls that failed, by error). Nothing when `stats`
/// is empty (before librdkafka's first statistics).
void render_upstream_metrics(const backend::api::client::stats& stats, std::string& out);

}  // namespace sluice::gateway
