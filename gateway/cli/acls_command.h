// `sluice acls add|remove|list`: manages the ACLs of a stopped sluice's data directory
// (auth::authorizer, DATA_DIR/acls) with kafka-acls' flags. Run from main before anything else.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace sluice::gateway {

/// Runs `sluice acls ARGS...` (`args` excludes "sluice" and "acls"). Returns the exit code;
/// throws config_error (exit 2) for bad flags, an unusable data directory or a running sluice
/// holding it.
int run_acls_command(const std::vector<std::string>& args, std::ostream& out);

/// The text `sluice acls --help` prints.
std::string acls_usage_text();

}  // namespace sluice::gateway
