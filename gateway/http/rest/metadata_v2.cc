// REST Proxy v2 metadata: GET / and POST / (liveness, answer {}), GET /topics (names), GET
// /topics/{t} (name, configs, partitions), GET /topics/{t}/partitions[/{p}] (leader and
// replicas: this node), GET /topics/{t}/partitions/{p}/offsets (beginning and end offsets),
// GET /brokers (the cluster's broker ids). Everything through the client level's admin
// (api::admin), so that the routes answer the same over a Kafka cluster.
#include <algorithm>

#include "gateway/http/rest/rest_routes.h"

namespace sluice::gateway::rest {
namespace api = backend::api;
using boost::beast::http::verb;

namespace {

void write_partition(json::writer& w, const api::partition_info& p) {
    w.start_object();
    w.field("partition", p.partition.value);
    w.field("leader", p.leader);
    w.key("replicas");
    w.start_array();
    for (const auto node : p.replicas) {
        w.start_object();
        w.field("broker", node);
        w.key("leader");
        w.boolean(node == p.leader);
        w.key("in_sync");
        w.boolean(std::find(p.isr.begin(), p.isr.end(), node) != p.isr.end());
        w.end_object();
    }
    w.end_array();
    w.end_object();
}

/// The topic of the path, or the v2 error answer (40401 for an unknown topic).
boost::asio::awaitable<std::variant<api::topic_info, http_response>> find_v2_topic(
    rest_context* rc, topic_name topic) {
    auto d = co_await rc->admin().describe_topic(topic);
    if (!d) {
        if (d.error().reason() == api::errc::unknown_topic_or_partition) {
            co_return v2_error(code::topic_not_found, std::string(topic_not_found_message));
        }
        auto e = from_backend(d.error(), subject::topic);
        co_return v2_error(e.code, e.message);
    }
    co_return std::move(*d);
}

boost::asio::awaitable<handler_result> root(http_request_context) {
    co_return json_response(200, v2_json, "{}");
}

boost::asio::awaitable<handler_result> list_topics(rest_context* rc, http_request_context ctx) {
    auto all = co_await rc->admin().list_topics();
    if (!all) {
        auto e = from_backend(all.error(), subject::topic);
        co_return v2_error(e.code, e.message);
    }
    const std::string host = authorizer_host(ctx.peer);
    requester who = rest_requester(ctx);
    who.host = host;
    json::writer w;
    w.start_array();
    for (const auto& t : *all) {
        if (!t.internal && !is_sluice_topic(t.name.value) &&
            rc->chain.visible(who, auth::acl_operation::describe, auth::resource_type::topic,
                              t.name.value)) {
            w.string(t.name.value);
        }
    }
    w.end_array();
    co_return json_response(200, v2_json, w.str());
}

boost::asio::awaitable<handler_result> get_topic(rest_context* rc, http_request_context ctx) {
    const topic_name topic(std::string(*ctx.params.get("topic")));
    auto found = co_await find_v2_topic(rc, topic);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const auto& d = std::get<api::topic_info>(found);
    auto configs = co_await rc->admin().describe_topic_configs(topic);
    json::writer w;
    w.start_object();
    w.field("name", d.name.value);
    w.key("configs");
    w.start_object();
    if (configs) {
        for (const auto& c : *configs) {
            if (c.value) {
                w.field(c.name, *c.value);
            }
        }
    }
    w.end_object();
    w.key("partitions");
    w.start_array();
    for (const auto& p : d.partitions) {
        write_partition(w, p);
    }
    w.end_array();
    w.end_object();
    co_return json_response(200, v2_json, w.str());
}

boost::asio::awaitable<handler_result> list_partitions(rest_context* rc, http_request_context ctx) {
    auto found = co_await find_v2_topic(rc, topic_name(std::string(*ctx.params.get("topic"))));
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    json::writer w;
    w.start_array();
    for (const auto& p : std::get<api::topic_info>(found).partitions) {
        write_partition(w, p);
    }
    w.end_array();
    co_return json_response(200, v2_json, w.str());
}

/// The partition of the path, or the 404 answer.
boost::asio::awaitable<std::variant<api::partition_info, http_response>> find_partition(
    rest_context* rc, const http_request_context& ctx) {
    auto found = co_await find_v2_topic(rc, topic_name(std::string(*ctx.params.get("topic"))));
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    auto& d = std::get<api::topic_info>(found);
    auto p = parse_partition(*ctx.params.get("partition"));
    if (!p || *p >= static_cast<std::int32_t>(d.partitions.size())) {
        co_return v2_error(code::partition_not_found, std::string(partition_not_found_message));
    }
    co_return std::move(d.partitions[static_cast<std::size_t>(*p)]);
}

boost::asio::awaitable<handler_result> get_partition(rest_context* rc, http_request_context ctx) {
    auto found = co_await find_partition(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    json::writer w;
    write_partition(w, std::get<api::partition_info>(found));
    co_return json_response(200, v2_json, w.str());
}

boost::asio::awaitable<handler_result> partition_offsets(rest_context* rc,
                                                         http_request_context ctx) {
    auto found = co_await find_partition(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const topic_name topic(std::string(*ctx.params.get("topic")));
    const partition_id p = std::get<api::partition_info>(found).partition;
    std::vector<api::offset_query> queries;
    queries.push_back({topic, p, api::offset_spec{api::offset_spec::kind::earliest, -1}});
    queries.push_back({topic, p, api::offset_spec{api::offset_spec::kind::latest, -1}});
    auto offsets = co_await rc->admin().list_offsets(std::move(queries),
                                                     api::isolation::read_uncommitted);
    for (const auto& o : offsets) {
        if (o.error) {
            auto e = from_backend(o.error, subject::partition);
            co_return v2_error(e.code, e.message);
        }
    }
    json::writer w;
    w.start_object();
    w.field("beginning_offset", offsets.at(0).off.value);
    w.field("end_offset", offsets.at(1).off.value);
    w.end_object();
    co_return json_response(200, v2_json, w.str());
}

boost::asio::awaitable<handler_result> brokers(rest_context* rc, http_request_context) {
    auto cluster = co_await rc->admin().describe_cluster();
    if (!cluster) {
        auto e = from_backend(cluster.error(), subject::topic);
        co_return v2_error(e.code, e.message);
    }
    json::writer w;
    w.start_object();
    w.key("brokers");
    w.start_array();
    for (const auto& b : cluster->brokers) {
        w.int64(b.node_id);
    }
    w.end_array();
    w.end_object();
    co_return json_response(200, v2_json, w.str());
}

}  // namespace

void add_v2_metadata_routes(router& routes, rest_context& ctx) {
    auto bind = [rc = &ctx](auto fn) {
        return [rc, fn](http_request_context c) { return fn(rc, std::move(c)); };
    };
    routes.add(verb::get, "/", root);
    routes.add(verb::post, "/", root);
    routes.add(verb::get, "/topics", bind(list_topics));
    routes.add(verb::get, "/topics/{topic}", bind(get_topic));
    routes.add(verb::get, "/topics/{topic}/partitions", bind(list_partitions));
    routes.add(verb::get, "/topics/{topic}/partitions/{partition}", bind(get_partition));
    routes.add(verb::get, "/topics/{topic}/partitions/{partition}/offsets",
               bind(partition_offsets));
    routes.add(verb::get, "/brokers", bind(brokers));
}

}  // namespace sluice::gateway::rest
