// What the REST Proxy API v3 routes share (owned by gateway/http/rest): the links of
// Confluent's resource shapes (metadata.self, resource_name, related), the cluster check of
// every path, and backend errors as v3 answers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http/rest/rest_support.h"

namespace sluice::gateway::rest {

/// The URLs of a v3 resource.
struct v3_links {
    std::string base;     // scheme://host
    std::string cluster;  // the cluster id
    std::string clusters() const { return base + "/v3/clusters"; }
    std::string of_cluster() const { return clusters() + "/" + url_segment(cluster); }
    std::string of_topic(std::string_view t) const {
        return of_cluster() + "/topics/" + url_segment(t);
    }
    std::string of_group(std::string_view g) const {
        return of_cluster() + "/consumer-groups/" + url_segment(g);
    }
    std::string crn() const { return "crn:///kafka=" + cluster; }
};

inline v3_links links_for(const rest_context* rc, const http_request_context& ctx) {
    return v3_links{base_url(ctx, rc->settings), rc->cluster_id};
}

inline void related(json::writer& w, std::string_view name, const std::string& url) {
    w.key(name);
    w.start_object();
    w.field("related", url);
    w.end_object();
}

/// A resource's "metadata": self and (when not empty) resource_name.
inline void metadata(json::writer& w, const std::string& self, const std::string& resource_name) {
    w.key("metadata");
    w.start_object();
    w.field("self", self);
    if (!resource_name.empty()) {
        w.field("resource_name", resource_name);
    }
    w.end_object();
}

/// A list's "metadata": self and next (null: no paging).
inline void list_metadata(json::writer& w, const std::string& self) {
    w.key("metadata");
    w.start_object();
    w.field("self", self);
    w.null_field("next");
    w.end_object();
}

/// A topic as a KafkaTopic resource (v3_routes.cc); `authorized_operations` (the
/// requester's, when include_authorized_operations=true asked for them) is written when set.
void write_v3_topic(json::writer& w, const v3_links& l, const backend::api::topic_info& t,
                    const std::vector<std::string_view>* authorized_operations = nullptr);

/// Whether the request asks for authorized operations (include_authorized_operations=true).
inline bool wants_authorized_operations(const http_request_context& ctx) {
    const auto v = ctx.query.get("include_authorized_operations");
    return v && *v == "true";
}

/// The operations on `topic` the request's principal may do, in the openapi's names
/// (AuthorizedOperations; every one when the authorizer is off) (v3_routes.cc).
std::vector<std::string_view> topic_authorized_operations(const rest_context* rc,
                                                          const http_request_context& ctx,
                                                          std::string_view topic);

/// A v3 list answer: {"kind": kind, "metadata": {"self": self, "next": null}, "data": [...]},
/// the data's items written by `write_items(w)`.
template <typename WriteItems>
std::string v3_list_body(std::string_view kind, const std::string& self,
                         WriteItems write_items) {
    json::writer w;
    w.start_object();
    w.field("kind", kind);
    list_metadata(w, self);
    w.key("data");
    w.start_array();
    write_items(w);
    w.end_array();
    w.end_object();
    return w.str();
}

inline http_response v3_ok(std::string body) {
    return json_response(200, v3_type, std::move(body));
}

/// The 404 for a cluster id that is not this one (compat: the REST Proxy's message).
inline std::optional<http_response> check_cluster(const rest_context* rc,
                                                  const http_request_context& ctx) {
    const auto id = *ctx.params.get("cluster_id");
    if (id != rc->cluster_id) {
        return v3_error(code::not_found, "Cluster " + std::string(id) + " cannot be found.");
    }
    return std::nullopt;
}

inline http_response unknown_topic_partition() {
    // compat: KafkaExceptionMapper maps UnknownTopicOrPartitionException to 404 / 40403.
    return v3_error(code::unknown_topic_or_partition,
                    "This server does not host this topic-partition.");
}

/// The first of `checks` the chain refuses, as a v3 answer (rest_support.h refuse_checks).
inline std::optional<http_response> v3_refused(const rest_context* rc,
                                               const http_request_context& ctx,
                                               const acl_checks& checks) {
    return refuse_checks(*rc, ctx, checks, false);
}

/// 204 No Content.
inline http_response v3_no_content() { return json_response(204, v3_type, std::string()); }

/// A backend error as the v3 API answers it (KafkaExceptionMapper's codes; the backend's own
/// message where it has one, for the errors a client caused).
inline http_response v3_backend_error(const backend::api::backend_error& e) {
    if (e.reason() == backend::api::errc::unknown_topic_or_partition) {
        return unknown_topic_partition();
    }
    auto mapped = from_backend(e, subject::topic);
    if (mapped.code == code::kafka_bad_request && !e.message.empty()) {
        mapped.message = e.message;
    }
    return v3_error(mapped.code, mapped.message);
}

}  // namespace sluice::gateway::rest
