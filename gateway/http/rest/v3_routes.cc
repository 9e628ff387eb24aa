// REST Proxy API v3 metadata: GET /v3/clusters, /v3/clusters/{cluster_id},
// /v3/clusters/{cluster_id}/topics[/{topic_name}], .../topics/{t}/partitions[/{partition_id}]
// (api/v3/openapi.yaml's ClusterData, TopicData and PartitionData, with the kind, metadata.self,
// resource_name and related links), from the client level's admin (api::admin: brokers,
// controller, leaders and replicas as the cluster has them). Produce (POST .../records) is in
// v3_produce.cc; topic, config, broker and consumer group administration in v3_admin.cc.
#include "gateway/http/rest/rest_routes.h"
#include "gateway/http/rest/v3_support.h"

namespace sluice::gateway::rest {
namespace api = backend::api;
using boost::beast::http::verb;

void write_v3_topic(json::writer& w, const v3_links& l, const api::topic_info& t) {
    const std::string self = l.of_topic(t.name.value);
    w.start_object();
    w.field("kind", "KafkaTopic");
    metadata(w, self, l.crn() + "/topic=" + t.name.value);
    w.field("cluster_id", l.cluster);
    w.field("topic_name", t.name.value);
    w.key("is_internal");
    w.boolean(t.internal);
    w.field("replication_factor",
            t.partitions.empty() ? 0 : static_cast<std::int64_t>(t.partitions[0].replicas.size()));
    w.field("partitions_count", static_cast<std::int64_t>(t.partitions.size()));
    related(w, "partitions", self + "/partitions");
    related(w, "configs", self + "/configs");
    related(w, "partition_reassignments", self + "/partitions/-/reassignment");
    w.end_object();
}

namespace {

void write_cluster(json::writer& w, const v3_links& l, std::int32_t controller) {
    w.start_object();
    w.field("kind", "KafkaCluster");
    metadata(w, l.of_cluster(), l.crn());
    w.field("cluster_id", l.cluster);
    related(w, "controller", l.of_cluster() + "/brokers/" + std::to_string(controller));
    related(w, "acls", l.of_cluster() + "/acls");
    related(w, "brokers", l.of_cluster() + "/brokers");
    related(w, "broker_configs", l.of_cluster() + "/broker-configs");
    related(w, "consumer_groups", l.of_cluster() + "/consumer-groups");
    related(w, "topics", l.of_cluster() + "/topics");
    related(w, "partition_reassignments",
            l.of_cluster() + "/topics/-/partitions/-/reassignment");
    w.end_object();
}

void write_v3_partition(json::writer& w, const v3_links& l, std::string_view topic,
                        const api::partition_info& info) {
    const std::int32_t p = info.partition.value;
    const std::string self = l.of_topic(topic) + "/partitions/" + std::to_string(p);
    w.start_object();
    w.field("kind", "KafkaPartition");
    metadata(w, self, l.crn() + "/topic=" + std::string(topic) + "/partition=" + std::to_string(p));
    w.field("cluster_id", l.cluster);
    w.field("topic_name", topic);
    w.field("partition_id", p);
    if (info.leader >= 0) {
        related(w, "leader", self + "/replicas/" + std::to_string(info.leader));
    } else {
        w.null_field("leader");
    }
    related(w, "replicas", self + "/replicas");
    related(w, "reassignment", self + "/reassignment");
    w.end_object();
}

boost::asio::awaitable<handler_result> list_clusters(rest_context* rc, http_request_context ctx) {
    const auto l = links_for(rc, ctx);
    auto cluster = co_await rc->admin().describe_cluster();
    if (!cluster) {
        co_return v3_backend_error(cluster.error());
    }
    const auto items = [&](json::writer& w) {
        write_cluster(w, l, cluster->controller_id);
    };
    co_return v3_ok(v3_list_body("KafkaClusterList", l.clusters(), items));
}

boost::asio::awaitable<handler_result> get_cluster(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto cluster = co_await rc->admin().describe_cluster();
    if (!cluster) {
        co_return v3_backend_error(cluster.error());
    }
    json::writer w;
    write_cluster(w, links_for(rc, ctx), cluster->controller_id);
    co_return v3_ok(w.str());
}

boost::asio::awaitable<handler_result> list_cluster_topics(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const auto l = links_for(rc, ctx);
    auto all = co_await rc->admin().list_topics();
    if (!all) {
        co_return v3_backend_error(all.error());
    }
    const std::string host = authorizer_host(ctx.peer);
    requester who = rest_requester(ctx);
    who.host = host;
    const auto items = [&](json::writer& w) {
        for (const auto& t : *all) {
            if (!is_sluice_topic(t.name.value) &&
                rc->chain.visible(who, auth::acl_operation::describe, auth::resource_type::topic,
                                  t.name.value)) {
                write_v3_topic(w, l, t);
            }
        }
    };
    co_return v3_ok(v3_list_body("KafkaTopicList", l.of_cluster() + "/topics", items));
}

boost::asio::awaitable<handler_result> v3_get_topic(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto d = co_await rc->admin().describe_topic(
        topic_name(std::string(*ctx.params.get("topic_name"))));
    if (!d) {
        co_return v3_backend_error(d.error());
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
    auto d = co_await rc->admin().describe_topic(topic_name(topic));
    if (!d) {
        co_return v3_backend_error(d.error());
    }
    const auto l = links_for(rc, ctx);
    const auto items = [&](json::writer& w) {
        for (const auto& p : d->partitions) {
            write_v3_partition(w, l, topic, p);
        }
    };
    co_return v3_ok(v3_list_body("KafkaPartitionList", l.of_topic(topic) + "/partitions", items));
}

boost::asio::awaitable<handler_result> v3_get_partition(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const std::string topic(*ctx.params.get("topic_name"));
    auto d = co_await rc->admin().describe_topic(topic_name(topic));
    auto p = parse_partition(*ctx.params.get("partition_id"));
    if (!d || !p || *p >= static_cast<std::int32_t>(d->partitions.size())) {
        if (d || d.error().reason() == api::errc::unknown_topic_or_partition) {
            co_return unknown_topic_partition();
        }
        co_return v3_backend_error(d.error());
    }
    json::writer w;
    write_v3_partition(w, links_for(rc, ctx), topic, d->partitions[static_cast<std::size_t>(*p)]);
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
    add_v3_admin_routes(routes, ctx);
}

}  // namespace sluice::gateway::rest
