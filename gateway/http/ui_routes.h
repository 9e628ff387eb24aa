// The browser files on the HTTP front: GET /ui/ (index.html), /ui/sluice.js, /ui/style.css and
// every other file of gateway/http/ui/ (the console's, under console/, also at GET / for a
// browser), embedded into the executable (ui_assets.h). Answers
// carry the file's content type, a strong ETag and Cache-Control: no-cache (browsers revalidate
// and get 304 Not Modified while the file is unchanged); an unknown file is 404. Stateless and
// thread-safe: the files are read-only static data.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "gateway/httpcore/router.h"
#include "gateway/http/ui_assets.h"
#include "gateway/policy/chain.h"

namespace sluice::gateway {

/// Registers GET /ui (a redirect to /ui/, query kept) and GET /ui/{path...} (HEAD implied),
/// serving `assets`: by default the embedded ones; tests pass their own, sorted by path.
void add_ui_routes(router& routes, std::span<const ui_asset> assets = ui_assets());

/// Registers the console at GET / (HEAD implied): a request whose Accept header prefers HTML
/// (a browser's) gets console/index.html of `assets`; any other is handed to the GET / route
/// registered before (the REST Proxy's), or answered 404 when there was none. Call after the
/// other routes are added.
void add_console_route(router& routes, std::span<const ui_asset> assets = ui_assets());

/// Whether an Accept header value prefers text/html: it names text/html (or
/// application/xhtml+xml) with a q above 0 and at least the q of every JSON type it names.
/// A missing header, */* alone, or a JSON type first is not a browser's request.
bool accept_prefers_html(std::string_view accept);

/// The Content-Type for a file name, by its extension ("application/octet-stream" when the
/// extension is unknown). Text types name UTF-8.
std::string_view ui_content_type(std::string_view path);

/// Whether an If-None-Match header value matches `etag` (a quoted strong tag): "*", or a
/// comma-separated list naming it, weak or strong (the weak comparison RFC 9110 13.1.2 asks
/// for).
bool etag_matches(std::string_view if_none_match, std::string_view etag);

}  // namespace sluice::gateway

namespace sluice::backend::api {
class admin;
class queues;
}  // namespace sluice::backend::api

namespace sluice::gateway {

/// What the console's own routes stand on (add_console_api_routes).
struct console_services {
    backend::api::admin& admin;
    /// The SQS front's queues; null in upstream mode (no purge route then).
    backend::api::queues* queues = nullptr;
    policy_chain chain = {};
    std::string cluster_id;
    std::int32_t node_id = 0;
    /// Native: the broker level is this process's; upstream: a Kafka cluster behind it.
    bool upstream = false;
};

/// The console's actions that no REST route gives, as JSON (errors
/// {"error_code":<status>,"message":"..."}), written against the admin interface so that they
/// run in upstream mode too:
/// - GET /v1/console/overview: version, mode, cluster id, the brokers (the Kafka listeners).
/// - GET /v1/console/partition-sizes: {"partitions": [{topic, partition, size_bytes, node_id}]
///   (each partition's log on its leader, DescribeLogDirs through admin), "unknown": [{node_id,
///   reason}] (brokers that did not answer in time or refused)}; DESCRIBE on the cluster, as
///   Kafka's DescribeLogDirs.
/// - POST /v1/console/groups/{group}/reset-offsets {"topic", "to": "earliest"|"latest"|
///   "timestamp"|"offset", "timestamp": ms, "offset": n, "partitions": [..] (default all)}:
///   sets an empty group's committed offsets (409 while it has members); READ on the group
///   (the guard) and on the topic (here), as Kafka's AlterConsumerGroupOffsets.
/// - DELETE /v1/console/groups/{group}: deletes an empty group (DELETE on the group).
/// - POST /v1/console/queues/{queue}/purge: PurgeQueue (DELETE on the queue's topic).
void add_console_api_routes(router& routes, console_services svc);

}  // namespace sluice::gateway
