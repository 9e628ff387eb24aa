// The consumer-group views of the HTTP front: GET /v1/groups (every group, with its total
// lag) and GET /v1/groups/{group} (members, assignments, committed offsets and lag per
// partition) as JSON, through the client level's admin (api::admin: list_groups,
// describe_group), and the group metrics on /metrics (lag per group and partition) from the
// group coordinator's snapshot (a metrics collector renders synchronously). Thread-safe as
// the interfaces are.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "gateway/httpcore/router.h"

#include "backend/api/client.h"
#include "backend/api/groups.h"
#include "gateway/policy/chain.h"

namespace sluice::gateway {

/// Which groups a listing shows (a principal's: those it may describe); empty shows all.
using group_filter = std::function<bool(std::string_view group)>;

/// The answer for `path` when it is /v1/groups or below; nullopt for any other path. The
/// listing shows only the groups `visible` passes.
boost::asio::awaitable<std::optional<http_answer>> group_route(backend::api::admin& admin,
                                                               std::string method,
                                                               std::string path,
                                                               group_filter visible = {});

/// Registers GET /v1/groups and GET /v1/groups/{path...} (HEAD implied); both answer with
/// group_route on the raw path, so the JSON and the errors are group_route's. With the
/// authorizer on, the listing is Kafka's ListGroups': every group for a principal that may
/// DESCRIBE the cluster, else the groups it may DESCRIBE (one group's view is checked by the
/// router's guard).
void add_group_routes(router& routes, backend::api::admin& admin, policy_chain chain = {});

/// Appends the group metrics in the Prometheus text format (a metrics_registry collector).
void render_group_metrics(backend::api::groups& groups, std::string& out);

}  // namespace sluice::gateway
