// REST Proxy API v3 metadata: GET /v3/clusters, /v3/clusters/{cluster_id},
// /v3/clusters/{cluster_id}/topics[/{topic_name}], .../topics/{t}/partitions[/{partition_id}]
// (api/v3/openapi.yaml's ClusterData, TopicData and PartitionData, with the kind, metadata.self,
// resource_name and related links). This node is the one broker, leader of every partition.
// Produce (POST .../records) is in v3_produce.cc.
#include "gateway/http/rest/rest_routes.h"

namespace sluice::gateway::rest {
using boost::beast::http::verb;

namespace {

struct links {
    std::string base;     // scheme://host
    std::string cluster;  // the cluster id
    std::string clusters() const { return base + "/v3/clusters"; }
    std::string of_cluster() const { return clusters() + "/" + url_segment(cluster); }
    std::string of_topic(std::string_view t) const {
        return of_cluster() + "/topics/" + url_segment(t);
    }
    std::string crn() const { return "crn:///kafka=" + cluster; }
};

void related(json::writer& w, std::string_view name, const std::string& url) {
    w.key(name);
    w.start_object();
    w.field("related", url);
    w.end_object();
}

void metadata(json::writer& w, const std::string& self, const std::string& resource_name) {
    w.key("metadata");
    w.start_object();
    w.field("self", self);
    if (!resource_name.empty()) {
        w.field("resource_name", resource_name);
    }
    w.end_object();
}

void list_metadata(json::writer& w, const std::string& self) {
    w.key("metadata");
    w.start_object();
    w.field("self", self);
    w.null_field("next");
    w.end_object();
}

void write_cluster(json::writer& w, const links& l, std::int32_t node) {
    w.start_object();
    w.field("kind", "KafkaCluster");
    metadata(w, l.of_cluster(), l.crn());
    w.field("cluster_id", l.cluster);
    related(w, "controller", l.of_cluster() + "/brokers/" + std::to_string(node));
    related(w, "acls", l.of_cluster() + "/acls");
    related(w, "brokers", l.of_cluster() + "/brokers");
    related(w, "broker_configs", l.of_cluster() + "/broker-configs");
    related(w, "consumer_groups", l.of_cluster() + "/consumer-groups");
    related(w, "topics", l.of_cluster() + "/topics");
    related(w, "partition_reassignments",
            l.of_cluster() + "/topics/-/partitions/-/reassignment");
    w.end_object();
}

void write_v3_topic(json::writer& w, const links& l, const backend::api::topic_description& t) {
    const std::string self = l.of_topic(t.name.value);
    w.start_object();
    w.field("kind", "KafkaTopic");
    metadata(w, self, l.crn() + "/topic=" + t.name.value);
    w.field("cluster_id", l.cluster);
    w.field("topic_name", t.name.value);
    w.key("is_internal");
    w.boolean(t.internal);
    w.field("replication_factor", 1);
    w.field("partitions_count", t.partitions);
    related(w, "partitions", self + "/partitions");
    related(w, "configs", self + "/configs");
    related(w, "partition_reassignments", self + "/partitions/-/reassignment");
    w.end_object();
}

void write_v3_partition(json::writer& w, const links& l, std::string_view topic, std::int32_t p,
                     std::int32_t node) {
    const std::string self = l.of_topic(topic) + "/partitions/" + std::to_string(p);
    w.start_object();
    w.field("kind", "KafkaPartition");
    metadata(w, self, l.crn() + "/topic=" + std::string(topic) + "/partition=" + std::to_string(p));
    w.field("cluster_id", l.cluster);
    w.field("topic_name", topic);
    w.field("partition_id", p);
    related(w, "leader", self + "/replicas/" + std::to_string(node));
    related(w, "replicas", self + "/replicas");
    related(w, "reassignment", self + "/reassignment");
    w.end_object();
}

links links_for(rest_context* rc, const http_request_context& ctx) {
    return links{base_url(ctx, rc->settings), rc->cluster_id};
}

http_response v3_ok(std::string body) { return json_response(200, v3_type, std::move(body)); }

/// The 404 for a cluster id that is not this one (compat: the REST Proxy's message).
std::optional<http_response> check_cluster(rest_context* rc, const http_request_context& ctx) {
    const auto id = *ctx.params.get("cluster_id");
    if (id != rc->cluster_id) {
        return v3_error(code::not_found, "Cluster " + std::string(id) + " cannot be found.");
    }
    return std::nullopt;
}

http_response unknown_topic_partition() {
    // compat: KafkaExceptionMapper maps UnknownTopicOrPartitionException to 404 / 40403.
    return v3_error(code::unknown_topic_or_partition,
                    "This server does not host this topic-partition.");
}

boost::asio::awaitable<handler_result> list_clusters(rest_context* rc, http_request_context ctx) {
    const auto l = links_for(rc, ctx);
    json::writer w;
    w.start_object();
    w.field("kind", "KafkaClusterList");
    list_metadata(w, l.clusters());
    w.key("data");
    w.start_array();
    write_cluster(w, l, rc->node_id);
    w.end_array();
    w.end_object();
    co_return v3_ok(w.str());
}

boost::asio::awaitable<handler_result> get_cluster(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    json::writer w;
    write_cluster(w, links_for(rc, ctx), rc->node_id);
    co_return v3_ok(w.str());
}

boost::asio::awaitable<handler_result> list_cluster_topics(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const auto l = links_for(rc, ctx);
    auto all = co_await rc->topics.list();
    const std::string host = authorizer_host(ctx.peer);
    requester who = rest_requester(ctx);
    who.host = host;
    json::writer w;
    w.start_object();
    w.field("kind", "KafkaTopicList");
    list_metadata(w, l.of_cluster() + "/topics");
    w.key("data");
    w.start_array();
    for (const auto& t : all) {
        if (!is_sluice_topic(t.name.value) &&
            rc->chain.visible(who, auth::acl_operation::describe, auth::resource_type::topic,
                              t.name.value)) {
            write_v3_topic(w, l, t);
        }
    }
    w.end_array();
    w.end_object();
    co_return v3_ok(w.str());
}

boost::asio::awaitable<handler_result> v3_get_topic(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto d = co_await rc->topics.describe(topic_name(std::string(*ctx.params.get("topic_name"))));
    if (!d) {
        co_return unknown_topic_partition();
    }
    json::writer w;
    write_v3_topic(w, links_for(rc, ctx), *d);
    co_return v3_ok(w.str());
}

boost::asio::awaitable<handler_result> v3_list_partitions(rest_context* rc,
                                                       http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const std::string topic(*ctx.params.get("topic_name"));
    auto d = co_await rc->topics.describe(topic_name(topic));
    if (!d) {
        co_return unknown_topic_partition();
    }
    const auto l = links_for(rc, ctx);
    json::writer w;
    w.start_object();
    w.field("kind", "KafkaPartitionList");
    list_metadata(w, l.of_topic(topic) + "/partitions");
    w.key("data");
    w.start_array();
    for (std::int32_t p = 0; p < d->partitions; ++p) {
        write_v3_partition(w, l, topic, p, rc->node_id);
    }
    w.end_array();
    w.end_object();
    co_return v3_ok(w.str());
}

boost::asio::awaitable<handler_result> v3_get_partition(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const std::string topic(*ctx.params.get("topic_name"));
    auto d = co_await rc->topics.describe(topic_name(topic));
    auto p = parse_partition(*ctx.params.get("partition_id"));
    if (!d || !p || *p >= d->partitions) {
        co_return unknown_topic_partition();
    }
    json::writer w;
    write_v3_partition(w, links_for(rc, ctx), topic, *p, rc->node_id);
    co_return v3_ok(w.str());
}

}  // namespace

/// POST .../records (v3_produce.cc).
boost::asio::awaitable<handler_result> produce_v3(rest_context* rc, http_request_context ctx);

void add_v3_routes(router& routes, rest_context& ctx) {
    auto bind = [rc = &ctx](auto fn) {
        return [rc, fn](http_request_context c) { return fn(rc, std::move(c)); };
    };
    const std::string cluster = "/v3/clusters/{cluster_id}";
    routes.add(verb::get, "/v3/clusters", bind(list_clusters));
    routes.add(verb::get, cluster, bind(get_cluster));
    routes.add(verb::get, cluster + "/topics", bind(list_cluster_topics));
    routes.add(verb::get, cluster + "/topics/{topic_name}", bind(v3_get_topic));
    routes.add(verb::get, cluster + "/topics/{topic_name}/partitions", bind(v3_list_partitions));
    routes.add(verb::get, cluster + "/topics/{topic_name}/partitions/{partition_id}",
               bind(v3_get_partition));
    routes.add(verb::post, cluster + "/topics/{topic_name}/records", bind(produce_v3), true);
}

}  // namespace sluice::gateway::rest
