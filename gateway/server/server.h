// Process lifecycle: opens the data directory, starts the backend and every enabled
// listener, and shuts them down in order on SIGINT/SIGTERM.
#pragma once

#include <memory>

#include "backend/api/client.h"
#include "gateway/core/config.h"
#include "gateway/core/settings.h"
#include "gateway/server/upstream_settings.h"

namespace sluice::gateway {

/// Runs sluice until a termination signal; returns the process exit code. Throws
/// config_error (bad settings) or std::runtime_error (startup failure).
int run_server(const config& cfg);

/// Every settings table sluice reads, the gateway's and the backend's, in the doc's order:
/// what reject_unknown, --help and `sluice settings` go by.
setting_catalog settings_catalog();

/// The client level over the upstream cluster (backend/upstream, which only server.cc may
/// name); a property librdkafka refuses throws config_error with librdkafka's message.
std::unique_ptr<backend::api::client> open_upstream_client(const upstream_settings& upstream);

}  // namespace sluice::gateway
