// REST Proxy API v3 ACLs over the client level's admin (api::admin's describe/create/
// delete_acls), in the REST Proxy's shapes (api/v3/openapi.yaml): GET .../acls (KafkaAclList,
// filtered by resource_type, resource_name, pattern_type, principal, host, operation and
// permission), POST .../acls (one ACL, 201), POST .../acls:batch ({"data": [...]}, 201) and
// DELETE .../acls (resource_type, pattern_type, operation and permission required; the deleted
// ACLs). The router's guard checks DESCRIBE (listing) or ALTER (changes) on the cluster
// (gateway/policy/front_acls.cc), as Kafka's DescribeAcls, CreateAcls and DeleteAcls do.
// Upstream mode adds /v1/console/gateway-acls: the ACLs the gateway itself enforces (the
// fleet's, from _sluice_security), listed (GET), and changed through the fleet's shared state
// (POST one, DELETE by filter: gateway/http/shared_acls.h), with the same guard.
#include <array>
#include <cctype>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/logger.h"
#include "gateway/http/rest/rest_routes.h"
#include "gateway/http/rest/v3_support.h"
#include "gateway/policy/audit.h"

namespace sluice::gateway::rest {
namespace api = backend::api;
using boost::beast::http::verb;

namespace {

// The openapi's names, indexed by Kafka's codes.
constexpr std::array<std::string_view, 8> acl_resource_type_names = {
    "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"};
constexpr std::array<std::string_view, 5> acl_pattern_type_names = {"UNKNOWN", "ANY", "MATCH",
                                                                    "LITERAL", "PREFIXED"};
constexpr std::array<std::string_view, 13> acl_operation_names = {
    "UNKNOWN", "ANY",      "ALL",           "READ",             "WRITE",
    "CREATE",  "DELETE",   "ALTER",         "DESCRIBE",         "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",    "ALTER_CONFIGS", "IDEMPOTENT_WRITE"};
constexpr std::array<std::string_view, 4> acl_permission_names = {"UNKNOWN", "ANY", "DENY",
                                                                  "ALLOW"};

template <std::size_t N, typename E>
std::string_view acl_name_of(const std::array<std::string_view, N>& names, E value) {
    const auto i = static_cast<std::size_t>(static_cast<std::int8_t>(value));
    return i < N ? names[i] : names[0];
}

/// `text` (case-insensitive) as one of `names`: its code, or nullopt.
template <std::size_t N>
std::optional<std::int8_t> acl_code_of(const std::array<std::string_view, N>& names,
                                       std::string_view text) {
    for (std::size_t i = 0; i < N; ++i) {
        const auto& n = names[i];
        if (n.size() == text.size() &&
            std::equal(n.begin(), n.end(), text.begin(), [](char a, char b) {
                return a == std::toupper(static_cast<unsigned char>(b));
            })) {
            return static_cast<std::int8_t>(i);
        }
    }
    return std::nullopt;
}

/// An enum field of a request (query parameter or body member) that must name one of `names`.
struct acl_field_error {
    std::string message;
};

template <typename E, std::size_t N>
std::optional<acl_field_error> read_acl_enum(const std::array<std::string_view, N>& names,
                                             std::string_view field, std::string_view text,
                                             E& out) {
    const auto c = acl_code_of(names, text);
    if (!c) {
        std::string allowed;
        for (const auto& n : names) {
            allowed += allowed.empty() ? "" : ", ";
            allowed += n;
        }
        return acl_field_error{"Invalid " + std::string(field) + " '" + std::string(text) +
                               "' (one of " + allowed + ")"};
    }
    out = static_cast<E>(*c);
    return std::nullopt;
}

/// The query string that names one ACL (its metadata.self), the openapi's order.
std::string acl_query_of(const api::acl_binding& b) {
    std::string q;
    auto add = [&](std::string_view name, std::string_view value) {
        q += q.empty() ? "?" : "&";
        q += name;
        q += '=';
        // As the openapi's examples write them: "*" left as it is.
        std::string v = url_segment(value);
        for (auto at = v.find("%2A"); at != std::string::npos; at = v.find("%2A", at)) {
            v.replace(at, 3, "*");
        }
        q += v;
    };
    add("resource_type", acl_name_of(acl_resource_type_names, b.resource_type));
    add("resource_name", b.resource_name);
    add("pattern_type", acl_name_of(acl_pattern_type_names, b.pattern_type));
    add("principal", b.principal);
    add("host", b.host);
    add("operation", acl_name_of(acl_operation_names, b.operation));
    add("permission", acl_name_of(acl_permission_names, b.permission));
    return q;
}

void write_acl(json::writer& w, const v3_links& l, const api::acl_binding& b) {
    w.start_object();
    w.field("kind", "KafkaAcl");
    w.key("metadata");
    w.start_object();
    w.field("self", l.of_cluster() + "/acls" + acl_query_of(b));
    w.end_object();
    w.field("cluster_id", l.cluster);
    w.field("resource_type", acl_name_of(acl_resource_type_names, b.resource_type));
    w.field("resource_name", b.resource_name);
    w.field("pattern_type", acl_name_of(acl_pattern_type_names, b.pattern_type));
    w.field("principal", b.principal);
    w.field("host", b.host);
    w.field("operation", acl_name_of(acl_operation_names, b.operation));
    w.field("permission", acl_name_of(acl_permission_names, b.permission));
    w.end_object();
}

/// The filter of GET and DELETE from the query; `required` names the parameters that must be
/// given (DELETE's). nullopt with `error` set when a parameter is missing or not valid.
std::optional<api::acl_filter> acl_filter_of_query(const param_list& query, bool required,
                                                   std::string& error) {
    api::acl_filter f;
    auto read = [&](std::string_view name, auto& names, auto& out) {
        const auto v = query.get(name);
        if (!v || v->empty()) {
            if (required) {
                error = "Query parameter " + std::string(name) + " is required";
                return false;
            }
            return true;
        }
        if (auto bad = read_acl_enum(names, name, *v, out)) {
            error = bad->message;
            return false;
        }
        return true;
    };
    if (!read("resource_type", acl_resource_type_names, f.resource_type) ||
        !read("pattern_type", acl_pattern_type_names, f.pattern_type) ||
        !read("operation", acl_operation_names, f.operation) ||
        !read("permission", acl_permission_names, f.permission)) {
        return std::nullopt;
    }
    if (const auto v = query.get("resource_name"); v && !v->empty()) {
        f.resource_name = std::string(*v);
    }
    if (const auto v = query.get("principal"); v && !v->empty()) {
        f.principal = std::string(*v);
    }
    if (const auto v = query.get("host"); v && !v->empty()) {
        f.host = std::string(*v);
    }
    return f;
}

/// One CreateAclRequestData body: every field required.
std::optional<api::acl_binding> acl_binding_of_json(const json::value& v, std::string& error) {
    if (!v.IsObject()) {
        error = "An ACL must be a JSON object";
        return std::nullopt;
    }
    api::acl_binding b;
    auto text = [&](std::string_view name) -> std::optional<std::string_view> {
        auto s = json::get_string(v, name);
        if (!s) {
            error = std::string(name) + " is required (a string)";
        }
        return s;
    };
    auto read = [&](std::string_view name, auto& names, auto& out) {
        const auto s = text(name);
        if (!s) {
            return false;
        }
        if (auto bad = read_acl_enum(names, name, *s, out)) {
            error = bad->message;
            return false;
        }
        return true;
    };
    if (!read("resource_type", acl_resource_type_names, b.resource_type) ||
        !read("pattern_type", acl_pattern_type_names, b.pattern_type) ||
        !read("operation", acl_operation_names, b.operation) ||
        !read("permission", acl_permission_names, b.permission)) {
        return std::nullopt;
    }
    const auto name = text("resource_name");
    const auto principal = name ? text("principal") : std::nullopt;
    const auto host = principal ? text("host") : std::nullopt;
    if (!host) {
        return std::nullopt;
    }
    b.resource_name = std::string(*name);
    b.principal = std::string(*principal);
    b.host = std::string(*host);
    return b;
}

/// A backend error of the ACL calls: a cluster without an authorizer and a binding or filter
/// the cluster refused are the client's (400, 40002, with the cluster's reason).
http_response acl_backend_error(const api::backend_error& e) {
    const auto r = e.reason();
    if (r == api::errc::unsupported || r == api::errc::invalid_request) {
        return v3_error(code::kafka_bad_request, e.text());
    }
    return v3_backend_error(e);
}

std::vector<auth::acl_binding> audit_bindings_of(const std::vector<api::acl_binding>& bs) {
    std::vector<auth::acl_binding> out;
    out.reserve(bs.size());
    for (const auto& b : bs) {
        out.push_back(auth::acl_binding{static_cast<auth::resource_type>(b.resource_type),
                                        b.resource_name,
                                        static_cast<auth::pattern_type>(b.pattern_type),
                                        b.principal,
                                        b.host,
                                        static_cast<auth::acl_operation>(b.operation),
                                        static_cast<auth::acl_permission>(b.permission)});
    }
    return out;
}

/// The log line and audit record of a change made through REST.
void report_acl_change(const http_request_context& ctx, bool deleted,
                       const std::vector<api::acl_binding>& bs) {
    const auto changed = audit_bindings_of(bs);
    for (const auto& b : changed) {
        auth_log().info("ACL {} by {} (REST): {}", deleted ? "removed" : "added", ctx.principal,
                        auth::describe(b));
    }
    audit_acl_changed(audit_source{ctx.principal, audit_client_of(ctx.peer), "http"}, deleted,
                      changed);
}

boost::asio::awaitable<handler_result> v3_list_acls(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    std::string error;
    auto filter = acl_filter_of_query(ctx.query, false, error);
    if (!filter) {
        co_return v3_error(code::bad_request, error);
    }
    auto acls = co_await rc->admin().describe_acls(std::move(*filter));
    if (!acls) {
        co_return acl_backend_error(acls.error());
    }
    const auto l = links_for(rc, ctx);
    std::string self = l.of_cluster() + "/acls";
    const std::string_view target(ctx.req.target().data(), ctx.req.target().size());
    if (const auto q = target.find('?'); q != std::string_view::npos) {
        self.append(target.substr(q));
    }
    json::writer w;
    w.start_object();
    w.field("kind", "KafkaAclList");
    w.key("metadata");
    w.start_object();
    w.field("self", self);
    w.null_field("next");
    w.end_object();
    w.key("data");
    w.start_array();
    for (const auto& b : *acls) {
        write_acl(w, l, b);
    }
    w.end_array();
    w.end_object();
    co_return v3_ok(w.str());
}

void write_gateway_acl(json::writer& w, const api::acl_binding& b);

/// GET /v1/console/gateway-acls (upstream mode): the ACLs this gateway enforces, with the
/// filter of GET .../acls; {"data": [{resource_type, ...}]} in the KafkaAcl fields' names.
boost::asio::awaitable<handler_result> list_gateway_acls(rest_context* rc,
                                                         http_request_context ctx) {
    std::string error;
    auto filter = acl_filter_of_query(ctx.query, false, error);
    if (!filter) {
        co_return v3_error(code::bad_request, error);
    }
    auto acls = rc->gateway_acls->describe_acls(*filter);
    if (!acls) {
        co_return acl_backend_error(acls.error());
    }
    json::writer w;
    w.start_object();
    w.key("data");
    w.start_array();
    for (const auto& b : *acls) {
        write_gateway_acl(w, b);
    }
    w.end_array();
    w.end_object();
    co_return v3_ok(w.str());
}

/// The gateway-acls answer's shape of one binding: the KafkaAcl fields, no links.
void write_gateway_acl(json::writer& w, const api::acl_binding& b) {
    w.start_object();
    w.field("resource_type", acl_name_of(acl_resource_type_names, b.resource_type));
    w.field("resource_name", b.resource_name);
    w.field("pattern_type", acl_name_of(acl_pattern_type_names, b.pattern_type));
    w.field("principal", b.principal);
    w.field("host", b.host);
    w.field("operation", acl_name_of(acl_operation_names, b.operation));
    w.field("permission", acl_name_of(acl_permission_names, b.permission));
    w.end_object();
}

/// Stores a change of the gateway's own ACLs in the fleet's shared state (then here), and
/// reports it; an error answer (503, nothing changed) when the cluster did not store it.
boost::asio::awaitable<std::optional<http_response>> store_gateway_acls(
    rest_context* rc, const http_request_context& ctx, const std::vector<api::acl_binding>& bs,
    bool present) {
    std::string failure;
    try {
        co_await rc->shared_gateway_acls->store(audit_bindings_of(bs), present);
    } catch (const std::exception& e) {
        failure = e.what();
    }
    if (!failure.empty()) {
        auth_log().error("console: gateway ACLs not {} by {}: {}", present ? "added" : "removed",
                         ctx.principal, failure);
        co_return v3_error(code::broker_not_available,
                           std::string("The gateway's ACLs were not changed: ") + failure);
    }
    report_acl_change(ctx, !present, bs);
    co_return std::nullopt;
}

/// POST /v1/console/gateway-acls (upstream mode): one ACL (the body of POST .../acls) added
/// to the ACLs this gateway and its fleet enforce; 201 with no body.
boost::asio::awaitable<handler_result> create_gateway_acl(rest_context* rc,
                                                          http_request_context ctx) {
    json::document doc;
    if (auto bad = parse_body(ctx.req, doc, v3_type)) {
        co_return std::move(*bad);
    }
    std::string error;
    auto b = acl_binding_of_json(doc, error);
    if (!b) {
        co_return v3_error(code::bad_request, error);
    }
    // This gateway's authorizer must be on (else 400 40002, as the listing answers).
    if (auto on = rc->gateway_acls->describe_acls(api::acl_filter{}); !on) {
        co_return acl_backend_error(on.error());
    }
    std::vector<api::acl_binding> bindings;
    bindings.push_back(std::move(*b));
    const auto checked = audit_bindings_of(bindings);
    if (auto why = auth::validate(checked.front())) {
        co_return v3_error(code::kafka_bad_request, "Invalid ACL: " + *why);
    }
    if (auto failed = co_await store_gateway_acls(rc, ctx, bindings, true)) {
        co_return std::move(*failed);
    }
    co_return json_response(201, v3_type, std::string());
}

/// DELETE /v1/console/gateway-acls (upstream mode): the filter of DELETE .../acls (the same
/// parameters required); removes every ACL of this gateway and its fleet it matches, and
/// answers them ({"data": [...]}, the listing's shape).
boost::asio::awaitable<handler_result> delete_gateway_acls(rest_context* rc,
                                                           http_request_context ctx) {
    std::string error;
    auto filter = acl_filter_of_query(ctx.query, true, error);
    if (!filter) {
        co_return v3_error(code::bad_request, error);
    }
    auto matched = rc->gateway_acls->describe_acls(*filter);
    if (!matched) {
        co_return acl_backend_error(matched.error());
    }
    if (!matched->empty()) {
        if (auto failed = co_await store_gateway_acls(rc, ctx, *matched, false)) {
            co_return std::move(*failed);
        }
    }
    json::writer w;
    w.start_object();
    w.key("data");
    w.start_array();
    for (const auto& b : *matched) {
        write_gateway_acl(w, b);
    }
    w.end_array();
    w.end_object();
    co_return v3_ok(w.str());
}

/// Creates `bindings` (all or none): 201 with no body.
boost::asio::awaitable<handler_result> create_v3_acls(rest_context* rc,
                                                      const http_request_context& ctx,
                                                      std::vector<api::acl_binding> bindings) {
    auto done = co_await rc->admin().create_acls(bindings);
    if (!done) {
        co_return acl_backend_error(done.error());
    }
    report_acl_change(ctx, false, bindings);
    co_return json_response(201, v3_type, std::string());
}

boost::asio::awaitable<handler_result> v3_create_acl(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    json::document doc;
    if (auto bad = parse_body(ctx.req, doc, v3_type)) {
        co_return std::move(*bad);
    }
    std::string error;
    auto b = acl_binding_of_json(doc, error);
    if (!b) {
        co_return v3_error(code::bad_request, error);
    }
    std::vector<api::acl_binding> bindings{std::move(*b)};
    co_return co_await create_v3_acls(rc, ctx, std::move(bindings));
}

boost::asio::awaitable<handler_result> v3_batch_create_acls(rest_context* rc,
                                                            http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    json::document doc;
    if (auto bad = parse_body(ctx.req, doc, v3_type)) {
        co_return std::move(*bad);
    }
    const auto* data = doc.IsObject() ? json::member(doc, "data") : nullptr;
    if (data == nullptr || !data->IsArray()) {
        co_return v3_error(code::bad_request, "data must be an array of ACLs");
    }
    std::vector<api::acl_binding> bindings;
    for (const auto& item : data->GetArray()) {
        std::string error;
        auto b = acl_binding_of_json(item, error);
        if (!b) {
            co_return v3_error(code::bad_request, error);
        }
        bindings.push_back(std::move(*b));
    }
    co_return co_await create_v3_acls(rc, ctx, std::move(bindings));
}

boost::asio::awaitable<handler_result> v3_delete_acls(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    std::string error;
    auto filter = acl_filter_of_query(ctx.query, true, error);
    if (!filter) {
        co_return v3_error(code::bad_request, error);
    }
    auto deleted = co_await rc->admin().delete_acls(std::move(*filter));
    if (!deleted) {
        co_return acl_backend_error(deleted.error());
    }
    report_acl_change(ctx, true, *deleted);
    const auto l = links_for(rc, ctx);
    json::writer w;
    w.start_object();
    w.key("data");
    w.start_array();
    for (const auto& b : *deleted) {
        write_acl(w, l, b);
    }
    w.end_array();
    w.end_object();
    co_return v3_ok(w.str());
}

}  // namespace

void add_v3_acl_routes(router& routes, rest_context& ctx) {
    auto bind = [rc = &ctx](auto fn) {
        return [rc, fn](http_request_context c) { return fn(rc, std::move(c)); };
    };
    const std::string acls = "/v3/clusters/{cluster_id}/acls";
    routes.add(verb::get, acls, bind(v3_list_acls));
    routes.add(verb::post, acls, bind(v3_create_acl));
    routes.add(verb::delete_, acls, bind(v3_delete_acls));
    routes.add(verb::post, acls + ":batch", bind(v3_batch_create_acls));
    if (ctx.gateway_acls != nullptr) {
        routes.add(verb::get, "/v1/console/gateway-acls", bind(list_gateway_acls));
    }
    if (ctx.gateway_acls != nullptr && ctx.shared_gateway_acls != nullptr) {
        routes.add(verb::post, "/v1/console/gateway-acls", bind(create_gateway_acl));
        routes.add(verb::delete_, "/v1/console/gateway-acls", bind(delete_gateway_acls));
    }
}

}  // namespace sluice::gateway::rest
