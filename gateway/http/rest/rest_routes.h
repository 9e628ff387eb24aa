// The REST Proxy routes (owned by gateway/http/rest), registered on the HTTP router by the
// HTTP server: API v2 (produce, metadata, consumer instances) and API v3 (clusters, topics,
// partitions, records). docs/http.md documents every route with an example.
#pragma once

#include "gateway/http/rest/rest_support.h"
#include "gateway/httpcore/router.h"

namespace sluice::gateway::rest {

class consumer_registry;

/// POST /topics/{t}, POST /topics/{t}/partitions/{p} (produce_v2.cc).
void add_v2_produce_routes(router& routes, rest_context& ctx);
/// GET /, POST /, GET /topics, /topics/{t}, /topics/{t}/partitions[/{p}[/offsets]], /brokers
/// (metadata_v2.cc).
void add_v2_metadata_routes(router& routes, rest_context& ctx);
/// /consumers/... (consumer_routes.cc).
void add_v2_consumer_routes(router& routes, rest_context& ctx, consumer_registry& consumers);
/// /v3/clusters/... (v3_routes.cc; the administration routes of v3_admin.cc with it).
void add_v3_routes(router& routes, rest_context& ctx);
/// /v3/clusters/{c}/brokers, topic create/delete/grow, topic configs (v3_admin.cc; added by
/// add_v3_routes, with the consumer groups).
void add_v3_admin_routes(router& routes, rest_context& ctx);
/// /v3/clusters/{c}/consumer-groups/... (v3_groups.cc; added by add_v3_admin_routes).
void add_v3_group_routes(router& routes, rest_context& ctx);
/// /v3/clusters/{c}/acls and acls:batch (v3_acls.cc; added by add_v3_admin_routes).
void add_v3_acl_routes(router& routes, rest_context& ctx);

}  // namespace sluice::gateway::rest
