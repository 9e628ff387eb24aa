// The consumer-group views of the HTTP front: GET /v1/groups (every group, with its total
// lag) and GET /v1/groups/{group} (members, assignments, committed offsets and lag per
// partition) as JSON, and the group metrics on /metrics (lag per group and partition).
// Read-only views of the group coordinator; thread-safe as the coordinator is.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/httpcore/router.h"

#include "backend/api/groups.h"
#include "gateway/policy/front_acls.h"

namespace sluice::gateway {

/// Which groups a listing shows (a principal's: those it may describe); empty shows all.
using group_filter = std::function<bool(std::string_view group)>;

/// The answer for `path` when it is /v1/groups or below; nullopt for any other path. The
/// listing shows only the groups `visible` passes.
std::optional<http_answer> group_route(backend::api::groups& groups,
                                       const std::string& method, const std::string& path,
                                       const group_filter& visible = {});

/// Registers GET /v1/groups and GET /v1/groups/{path...} (HEAD implied); both answer with
/// group_route on the raw path, so the JSON and the errors are group_route's. With the
/// authorizer on, the listing is Kafka's ListGroups': every group for a principal that may
/// DESCRIBE the cluster, else the groups it may DESCRIBE (one group's view is checked by the
/// router's guard).
void add_group_routes(router& routes, backend::api::groups& groups, front_authorizer acl = {});

/// Appends the group metrics in the Prometheus text format (a metrics_registry collector).
void render_group_metrics(backend::api::groups& groups, std::string& out);

}  // namespace sluice::gateway
