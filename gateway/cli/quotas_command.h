// `sluice quotas set|delete|list`: manages the client quotas of a stopped sluice's data
// directory (auth::client_quotas, DATA_DIR/quotas) with kafka-configs' entity flags, or with
// --upstream those a fleet of gateways shares on the cluster (gateway/cli/security_state.h).
// Run from main before anything else.
#pragma once

#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "auth/client_quotas.h"
#include "gateway/cli/security_state.h"

namespace sluice::gateway {

/// The parsed arguments of `sluice quotas ...` (exposed for the tests).
struct quotas_args {
    std::string action;  // set, delete or list
    /// --data-dir DIR, or --upstream BOOTSTRAP (the cluster's _sluice_security).
    security_location where;
    /// The entity the flags name, each part as parse_entity takes it (user first).
    std::vector<std::pair<std::string, std::optional<std::string>>> entity_parts;
    auth::quota_entity entity;
    /// set: the values (--add); delete: the keys, as removals (--delete-config).
    std::vector<auth::quota_op> ops;
};

/// Parses and checks the arguments (`args` excludes "sluice" and "quotas"): the action, the
/// entity, the ops validated as AlterClientQuotas validates them (client_quotas::validate).
/// Throws config_error (exit 2) for anything wrong.
quotas_args parse_quotas_args(const std::vector<std::string>& args);

/// Runs `sluice quotas ARGS...`. Returns the exit code; throws config_error (exit 2) for bad
/// flags, an unusable data directory or a running sluice holding it, std::runtime_error when
/// --upstream's cluster cannot be read. `open` opens the cluster of --upstream.
int run_quotas_command(const std::vector<std::string>& args, std::ostream& out,
                       const upstream_opener& open = {});

/// The text `sluice quotas --help` prints.
std::string quotas_usage_text();

/// kafka-configs' line for one entity: "Quota configs for user-principal 'alice', the default
/// client-id are producer_byte_rate=1048576.0, request_percentage=50.0".
std::string describe_quota_line(const auth::quota_entity& entity,
                                const std::vector<std::pair<auth::quota_kind, double>>& values);

}  // namespace sluice::gateway
