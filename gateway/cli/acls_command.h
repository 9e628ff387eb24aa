// `sluice acls add|remove|list`: manages the ACLs of a stopped sluice's data directory
// (auth::authorizer, DATA_DIR/acls) with kafka-acls' flags, or with --upstream those a fleet of
// gateways shares on the cluster (gateway/cli/security_state.h). Run from main before anything
// else.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "gateway/cli/security_state.h"

namespace sluice::gateway {

/// Runs `sluice acls ARGS...` (`args` excludes "sluice" and "acls"). Returns the exit code;
/// throws config_error (exit 2) for bad flags, an unusable data directory or a running sluice
/// holding it; std::runtime_error when --upstream's cluster cannot be read. `open` opens the
/// cluster of --upstream.
int run_acls_command(const std::vector<std::string>& args, std::ostream& out,
                     const upstream_opener& open = {});

/// The text `sluice acls --help` prints.
std::string acls_usage_text();

}  // namespace sluice::gateway
