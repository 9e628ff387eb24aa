// Process lifecycle: opens the data directory, starts the backend and every enabled
// listener, and shuts them down in order on SIGINT/SIGTERM.
#pragma once

#include "gateway/core/config.h"

namespace sluice::gateway {

/// Runs sluice until a termination signal; returns the process exit code. Throws
/// config_error (bad settings) or std::runtime_error (startup failure).
int run_server(const config& cfg);

}  // namespace sluice::gateway
