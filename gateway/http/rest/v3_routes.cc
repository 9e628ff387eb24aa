// REST Proxy API v3 metadata: GET /v3/clusters, /v3/clusters/{cluster_id},
// /v3/clusters/{cluster_id}/topics[/{topic_name}], .../topics/{t}/partitions[/{partition_id}]
// (api/v3/openapi.yaml's ClusterData, TopicData and PartitionData, with the kind, metadata.self,
// resource_name and related links), from the client level's admin (api::admin: brokers,
// controller, leaders and replicas as the cluster has them). Produce (POST .../records) is in
// v3_produce.cc; topic, config, broker and consumer group administration in v3_admin.cc. Also
// the replicas of a partition and of a broker, and the reassignment paths (none in progress).
#include <algorithm>
#include <array>
#include <variant>

#include "gateway/http/rest/rest_routes.h"
#include "gateway/http/rest/v3_support.h"

namespace sluice::gateway::rest {
namespace api = backend::api;
using boost::beast::http::verb;

std::vector<std::string_view> topic_authorized_operations(const rest_context* rc,
                                                          const http_request_context& ctx,
                                                          std::string_view topic) {
    using op = auth::acl_operation;
    // Kafka's operations on a topic, in the order of their codes.
    static constexpr std::array<op, 8> topic_ops = {op::read,     op::write,
                                                    op::create,   op::remove,
                                                    op::alter,    op::describe,
                                                    op::describe_configs, op::alter_configs};
    const std::string host = authorizer_host(ctx.peer);
    requester who = rest_requester(ctx);
    who.host = host;
    const auto bits = rc->chain.authorized_operations(who, auth::resource_type::topic, topic,
                                                      topic_ops);
    std::vector<std::string_view> out;
    for (const auto o : topic_ops) {
        if ((bits & (std::int32_t{1} << static_cast<int>(o))) != 0) {
            out.push_back(o == op::remove ? std::string_view("DELETE") : auth::to_string(o));
        }
    }
    return out;
}

void write_v3_topic(json::writer& w, const v3_links& l, const api::topic_info& t,
                    const std::vector<std::string_view>* authorized_operations) {
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
    if (authorized_operations != nullptr) {
        w.key("authorized_operations");
        w.start_array();
        for (const auto op : *authorized_operations) {
            w.string(op);
        }
        w.end_array();
    }
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
    const bool with_ops = wants_authorized_operations(ctx);
    const auto items = [&](json::writer& w) {
        for (const auto& t : *all) {
            if (!is_sluice_topic(t.name.value) &&
                rc->chain.visible(who, auth::acl_operation::describe, auth::resource_type::topic,
                                  t.name.value)) {
                if (with_ops) {
                    const auto ops = topic_authorized_operations(rc, ctx, t.name.value);
                    write_v3_topic(w, l, t, &ops);
                } else {
                    write_v3_topic(w, l, t);
                }
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
    if (wants_authorized_operations(ctx)) {
        const auto ops = topic_authorized_operations(rc, ctx, d->name.value);
        write_v3_topic(w, links_for(rc, ctx), *d, &ops);
    } else {
        write_v3_topic(w, links_for(rc, ctx), *d);
    }
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

// --- replicas and reassignments ---------------------------------------------------------------

void write_v3_replica(json::writer& w, const v3_links& l, std::string_view topic,
                      const api::partition_info& info, std::int32_t broker) {
    const std::int32_t p = info.partition.value;
    const std::string self = l.of_topic(topic) + "/partitions/" + std::to_string(p) +
                             "/replicas/" + std::to_string(broker);
    w.start_object();
    w.field("kind", "KafkaReplica");
    metadata(w, self,
             l.crn() + "/topic=" + std::string(topic) + "/partition=" + std::to_string(p) +
                 "/replica=" + std::to_string(broker));
    w.field("cluster_id", l.cluster);
    w.field("topic_name", topic);
    w.field("partition_id", p);
    w.field("broker_id", broker);
    w.key("is_leader");
    w.boolean(info.leader == broker);
    w.key("is_in_sync");
    w.boolean(std::find(info.isr.begin(), info.isr.end(), broker) != info.isr.end());
    related(w, "broker", l.of_cluster() + "/brokers/" + std::to_string(broker));
    w.end_object();
}

/// The topic of the path and its partition, or the 404 the REST Proxy answers.
struct v3_partition_lookup {
    api::topic_info topic;
    std::size_t index = 0;
};

boost::asio::awaitable<std::variant<v3_partition_lookup, http_response>> find_v3_partition(
    rest_context* rc, const http_request_context& ctx) {
    const std::string topic(*ctx.params.get("topic_name"));
    auto d = co_await rc->admin().describe_topic(topic_name(topic));
    auto p = parse_partition(*ctx.params.get("partition_id"));
    if (!d || !p || *p >= static_cast<std::int32_t>(d->partitions.size())) {
        if (d || d.error().reason() == api::errc::unknown_topic_or_partition) {
            co_return unknown_topic_partition();
        }
        co_return v3_backend_error(d.error());
    }
    co_return v3_partition_lookup{std::move(*d), static_cast<std::size_t>(*p)};
}

boost::asio::awaitable<handler_result> v3_list_replicas(rest_context* rc,
                                                        http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto found = co_await find_v3_partition(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const auto& f = std::get<v3_partition_lookup>(found);
    const auto& info = f.topic.partitions[f.index];
    const auto l = links_for(rc, ctx);
    const auto items = [&](json::writer& w) {
        for (const auto b : info.replicas) {
            write_v3_replica(w, l, f.topic.name.value, info, b);
        }
    };
    co_return v3_ok(v3_list_body("KafkaReplicaList",
                                 l.of_topic(f.topic.name.value) + "/partitions/" +
                                     std::to_string(info.partition.value) + "/replicas",
                                 items));
}

boost::asio::awaitable<handler_result> v3_get_replica(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto found = co_await find_v3_partition(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const auto& f = std::get<v3_partition_lookup>(found);
    const auto& info = f.topic.partitions[f.index];
    const auto broker = parse_partition(*ctx.params.get("broker_id"));
    if (!broker ||
        std::find(info.replicas.begin(), info.replicas.end(), *broker) == info.replicas.end()) {
        co_return v3_error(code::not_found, "Replica " +
                                                std::string(*ctx.params.get("broker_id")) +
                                                " cannot be found.");
    }
    json::writer w;
    write_v3_replica(w, links_for(rc, ctx), f.topic.name.value, info, *broker);
    co_return v3_ok(w.str());
}

/// GET .../brokers/{b}/partition-replicas: the replicas the broker holds, topics the requester
/// may DESCRIBE only.
boost::asio::awaitable<handler_result> v3_list_broker_replicas(rest_context* rc,
                                                               http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto cluster = co_await rc->admin().describe_cluster();
    if (!cluster) {
        co_return v3_backend_error(cluster.error());
    }
    const auto broker = parse_partition(*ctx.params.get("broker_id"));
    if (!broker || std::none_of(cluster->brokers.begin(), cluster->brokers.end(),
                                [&](const auto& b) { return b.node_id == *broker; })) {
        co_return v3_error(code::not_found, "Broker " +
                                                std::string(*ctx.params.get("broker_id")) +
                                                " cannot be found.");
    }
    auto all = co_await rc->admin().list_topics();
    if (!all) {
        co_return v3_backend_error(all.error());
    }
    const std::string host = authorizer_host(ctx.peer);
    requester who = rest_requester(ctx);
    who.host = host;
    const auto l = links_for(rc, ctx);
    const auto items = [&](json::writer& w) {
        for (const auto& t : *all) {
            if (is_sluice_topic(t.name.value) ||
                !rc->chain.visible(who, auth::acl_operation::describe,
                                   auth::resource_type::topic, t.name.value)) {
                continue;
            }
            for (const auto& p : t.partitions) {
                if (std::find(p.replicas.begin(), p.replicas.end(), *broker) != p.replicas.end()) {
                    write_v3_replica(w, l, t.name.value, p, *broker);
                }
            }
        }
    };
    co_return v3_ok(v3_list_body(
        "KafkaReplicaList", l.of_cluster() + "/brokers/" + std::to_string(*broker) +
                                "/partition-replicas",
        items));
}

/// GET .../partitions/{p}/offset: the earliest and latest offsets (offset_type
/// earliest_and_latest, the only type the REST Proxy knows).
boost::asio::awaitable<handler_result> v3_partition_offsets(rest_context* rc,
                                                            http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const auto type = ctx.query.get("offset_type");
    if (type && *type != "earliest_and_latest") {
        co_return v3_error(code::bad_request, "offset_type:" + std::string(*type) +
                                                  " is invalid (earliest_and_latest)");
    }
    auto found = co_await find_v3_partition(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const auto& f = std::get<v3_partition_lookup>(found);
    const auto p = f.topic.partitions[f.index].partition;
    std::vector<api::offset_query> queries;
    queries.push_back({f.topic.name, p, api::offset_spec{api::offset_spec::kind::earliest, -1}});
    queries.push_back({f.topic.name, p, api::offset_spec{api::offset_spec::kind::latest, -1}});
    auto offsets = co_await rc->admin().list_offsets(std::move(queries),
                                                     api::isolation::read_uncommitted);
    for (const auto& o : offsets) {
        if (o.error) {
            co_return v3_backend_error(o.error);
        }
    }
    const auto l = links_for(rc, ctx);
    const std::string id = std::to_string(p.value);
    json::writer w;
    w.start_object();
    w.field("kind", "KafkaPartitionWithOffsets");
    metadata(w, l.of_topic(f.topic.name.value) + "/partitions/" + id + "/offset",
             l.crn() + "/topic=" + f.topic.name.value + "/partition=" + id +
                 "/offset_type=earliest_and_latest");
    w.field("cluster_id", l.cluster);
    w.field("topic_name", f.topic.name.value);
    w.field("partition_id", p.value);
    w.field("earliest_offset", offsets.at(0).off.value);
    w.field("latest_offset", offsets.at(1).off.value);
    w.end_object();
    co_return v3_ok(w.str());
}

// Reassignments: neither backend moves replicas (the native one is one node; librdkafka 2.0.2
// has no ListPartitionReassignments), so none is ever in progress, as a cluster with no
// reassignment under way answers.

boost::asio::awaitable<handler_result> v3_list_all_reassignments(rest_context* rc,
                                                                 http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const auto l = links_for(rc, ctx);
    co_return v3_ok(v3_list_body("KafkaReassignmentList",
                                 l.of_cluster() + "/topics/-/partitions/-/reassignment",
                                 [](json::writer&) {}));
}

boost::asio::awaitable<handler_result> v3_list_topic_reassignments(rest_context* rc,
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
    co_return v3_ok(v3_list_body("KafkaReassignmentList",
                                 l.of_topic(topic) + "/partitions/-/reassignment",
                                 [](json::writer&) {}));
}

boost::asio::awaitable<handler_result> v3_get_reassignment(rest_context* rc,
                                                           http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto found = co_await find_v3_partition(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const auto& f = std::get<v3_partition_lookup>(found);
    co_return v3_error(code::not_found,
                       "There is no ongoing reassignment for partition " +
                           std::to_string(f.topic.partitions[f.index].partition.value) +
                           " of topic " + f.topic.name.value + ".");
}

}  // namespace

/// POST .../records and .../records:batch (v3_produce.cc).
boost::asio::awaitable<handler_result> produce_v3(rest_context* rc, http_request_context ctx);
boost::asio::awaitable<handler_result> produce_batch_v3(rest_context* rc,
                                                        http_request_context ctx);

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
    const std::string partition = cluster + "/topics/{topic_name}/partitions/{partition_id}";
    routes.add(verb::get, partition + "/replicas", bind(v3_list_replicas));
    routes.add(verb::get, partition + "/replicas/{broker_id}", bind(v3_get_replica));
    routes.add(verb::get, partition + "/reassignment", bind(v3_get_reassignment));
    routes.add(verb::get, partition + "/offset", bind(v3_partition_offsets));
    routes.add(verb::get, cluster + "/topics/{topic_name}/partitions/-/reassignment",
               bind(v3_list_topic_reassignments));
    routes.add(verb::get, cluster + "/topics/-/partitions/-/reassignment",
               bind(v3_list_all_reassignments));
    routes.add(verb::get, cluster + "/brokers/{broker_id}/partition-replicas",
               bind(v3_list_broker_replicas));
    routes.add(verb::post, cluster + "/topics/{topic_name}/records", bind(produce_v3), true);
    routes.add(verb::post, cluster + "/topics/{topic_name}/records:batch",
               bind(produce_batch_v3));
    add_v3_admin_routes(routes, ctx);
}

}  // namespace sluice::gateway::rest
