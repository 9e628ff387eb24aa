// `sluice users set|delete|list`: manages the SASL users of a stopped sluice's data directory
// (auth::credential_store, DATA_DIR/credentials), or with --upstream those a fleet of gateways
// shares on the cluster (gateway/cli/security_state.h). Run from main before anything else
// starts.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "gateway/cli/security_state.h"

namespace sluice::gateway {

/// Runs `sluice users ARGS...` (`args` excludes "sluice" and "users"), reading a password from
/// `in` for `set`. Returns the exit code; throws config_error for bad usage, an unusable data
/// directory or a running sluice holding it, std::runtime_error when --upstream's cluster
/// cannot be read or does not store the change. `open` opens the cluster of --upstream.
int run_users_command(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                      const upstream_opener& open = {});

/// The text `sluice users --help` prints.
std::string users_usage_text();

}  // namespace sluice::gateway
