// The consumer-group views of the HTTP front: GET /v1/groups (every group, with its total
// lag) and GET /v1/groups/{group} (members, assignments, committed offsets and lag per
// partition) as JSON, and the group metrics on /metrics (lag per group and partition).
// Read-only views of the group coordinator; thread-safe as the coordinator is.
#pragma once

#include <optional>
#include <string>

#include "gateway/http/router.h"

#include "backend/api/groups.h"

namespace sluice::gateway {

/// The answer for `path` when it is /v1/groups or below; nullopt for any other path.
std::optional<http_answer> group_route(backend::api::groups& groups,
                                       const std::string& method, const std::string& path);

/// Registers GET /v1/groups and GET /v1/groups/{path...} (HEAD implied); both answer with
/// group_route on the raw path, so the JSON and the errors are group_route's.
void add_group_routes(router& routes, backend::api::groups& groups);

/// Appends the group metrics in the Prometheus text format (a metrics_registry collector).
void render_group_metrics(backend::api::groups& groups, std::string& out);

}  // namespace sluice::gateway
