// What every REST Proxy handler shares (owned by gateway/http/rest): the backend interfaces
// and settings it may use, and the small steps every handler repeats (media type checks,
// parsing a body, error and JSON answers, the advertised base URL).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "gateway/http/error_mapping.h"
#include "gateway/http/http_settings.h"
#include "gateway/http/json.h"
#include "gateway/http/record_producer.h"
#include "gateway/http/shared_acls.h"
#include "gateway/http/rest/media_type.h"
#include "gateway/http/rest/record_json.h"
#include "gateway/httpcore/router.h"
#include "gateway/policy/chain.h"
#include "gateway/policy/front_acls.h"

#include "backend/api/acls.h"
#include "backend/api/client.h"
#include "backend/api/groups.h"
#include "backend/api/records.h"
#include "backend/api/topics.h"

namespace sluice::gateway::rest {

/// The REST front's view of the process: built once by the HTTP server, shared (read-only)
/// by every handler; thread-safe as the interfaces are.
struct rest_context {
    const http_settings& settings;
    std::string cluster_id;
    std::int32_t node_id = 0;
    record_producer& producer;
    /// The policy chain, for the ACL checks the routes cannot make from the path alone
    /// (listings, bodies, instances) and the quotas of the streams.
    policy_chain chain = {};
    /// The client level (producer, admin, topology) the metadata and administration routes
    /// stand on; set by the HTTP server (never null there).
    backend::api::client* client = nullptr;
    /// Upstream mode: the ACLs this gateway enforces (the fleet's, from _sluice_security, over
    /// the data dir's), which admin's ACL calls (the cluster's) are not; null in native mode.
    backend::api::acl_store* gateway_acls = nullptr;
    /// Upstream mode: where the console's changes of gateway_acls go first (the fleet's
    /// _sluice_security); null in native mode.
    shared_acls* shared_gateway_acls = nullptr;

    backend::api::admin& admin() const { return client->admin(); }
};

/// Topics the REST front keeps its own state in (not listed to REST clients).
/// The media type of every API v3 answer.
inline constexpr std::string_view v3_type = "application/json";

inline bool is_sluice_topic(std::string_view name) { return name.rfind("_sluice", 0) == 0; }

/// The scheme://host[:port] (or the configured http.advertised.url) a client reaches this
/// server at, for base_uri and v3 links.
std::string base_url(const http_request_context& ctx, const http_settings& settings);

/// `s` percent-encoded for use as one URL path segment.
std::string url_segment(std::string_view s);

/// An answer with a JSON body.
http_response json_response(unsigned status, std::string_view content_type, std::string body);
/// An error answer of the v2 API (content type application/vnd.kafka.v2+json).
http_response v2_error(code c, std::string message);
/// An error answer of the v3 API (content type application/json).
http_response v3_error(code c, std::string message);
/// The 403 (40301) of an ACL denial, in the v2 API's content type or the v3 API's.
http_response acl_denied(const acl_check& denied, bool v2);
http_response acl_denied(const access& denied, bool v2);
/// Who sent a REST request, for the chain (front rest).
requester rest_requester(const http_request_context& ctx);
/// A check a handler made that failed: reported through the chain (the audit record, front
/// "http", the action "METHOD path"; the log line), then acl_denied's answer.
http_response report_denied(const rest_context& rc, const http_request_context& ctx,
                            const acl_check& denied, bool v2);
/// The first of `checks` the chain refuses (an all-or-nothing request "METHOD path"), then
/// acl_denied's answer; nullopt when all pass (at once when the chain does not authorize).
std::optional<http_response> refuse_checks(const rest_context& rc, const http_request_context& ctx,
                                           const acl_checks& checks, bool v2);
/// The producer identity of a request (for auto-creating a topic it produces to).
producer_identity producer_of(const rest_context& rc, const http_request_context& ctx);

/// The request's header `name`, or empty.
std::string_view header(const http_request& req, std::string_view name);

/// Parses the request body as one JSON value; nullopt on success, else the 400 answer
/// (`content_type` of the API). An empty body parses as `{}` when `empty_is_object`.
std::optional<http_response> parse_body(const http_request& req, json::document& doc,
                                        std::string_view content_type,
                                        bool empty_is_object = false);
/// parse_body() for a body the handler owns and keeps until it is done with `doc`: parsed in
/// place (faster; `doc` points into the body, which is garbage afterwards).
std::optional<http_response> parse_body_in_place(http_request& req, json::document& doc,
                                                 std::string_view content_type);

/// A path segment as a partition number (digits only, within int32).
std::optional<std::int32_t> parse_partition(std::string_view text);

}  // namespace sluice::gateway::rest
