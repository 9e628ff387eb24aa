// REST Proxy API v3 consumer groups over the client level's admin (api::admin: list_groups,
// describe_group with lag), in the REST Proxy's shapes (api/v3/openapi.yaml): GET
// .../consumer-groups[/{g}], .../{g}/consumers[/{consumer_id}[/assignments[/{topic}/partitions/
// {p}]]], .../{g}/lags[/{topic}/partitions/{p}] and .../{g}/lag-summary. Lags are those of the
// partitions with a committed offset (as the REST Proxy answers: none committed, a 404). A listing shows the groups the caller may DESCRIBE; one group
// needs DESCRIBE on it (the router's guard, gateway/policy/front_acls.cc).
#include <algorithm>
#include <cctype>
#include <map>
#include <vector>
#include <variant>

#include "gateway/http/rest/rest_routes.h"
#include "gateway/http/rest/v3_support.h"

namespace sluice::gateway::rest {
namespace api = backend::api;
using boost::beast::http::verb;

namespace {

// --- consumer groups -------------------------------------------------------------------------

/// A group state as the REST Proxy names it (Kafka's ConsumerGroupState constants:
/// PreparingRebalance -> PREPARING_REBALANCE, Stable -> STABLE; UNKNOWN when none).
std::string v3_group_state(std::string_view state) {
    if (state.empty()) {
        return "UNKNOWN";
    }
    std::string out;
    for (std::size_t i = 0; i < state.size(); ++i) {
        const auto ch = static_cast<unsigned char>(state[i]);
        if (i > 0 && std::isupper(ch)) {
            out += '_';
        }
        out += static_cast<char>(std::toupper(ch));
    }
    return out;
}

/// Kafka's ListGroups rule: every group for a principal that may DESCRIBE the cluster, else
/// the groups it may DESCRIBE.
bool may_describe_group(const rest_context* rc, const requester& who, std::string_view g) {
    return rc->chain.visible(who, auth::acl_operation::describe, auth::resource_type::cluster,
                             auth::cluster_resource_name) ||
           rc->chain.visible(who, auth::acl_operation::describe, auth::resource_type::group, g);
}

void write_group(json::writer& w, const v3_links& l, const api::group_view& g,
                 std::int32_t coordinator) {
    const std::string self = l.of_group(g.group_id.value);
    w.start_object();
    w.field("kind", "KafkaConsumerGroup");
    metadata(w, self, l.crn() + "/consumer-group=" + g.group_id.value);
    w.field("cluster_id", l.cluster);
    w.field("consumer_group_id", g.group_id.value);
    w.key("is_simple");
    w.boolean(g.protocol_type.empty());
    w.field("partition_assignor", g.protocol);
    w.field("state", v3_group_state(g.state));
    // The openapi's ConsumerGroupType (CLASSIC, CONSUMER); a group of consumer members only
    // is never mixed here (the backends name one protocol per group).
    w.field("type", g.type == "classic"    ? std::string_view("CLASSIC")
                    : g.type == "consumer" ? std::string_view("CONSUMER")
                                           : std::string_view("UNKNOWN"));
    w.key("is_mixed_consumer_group");
    w.boolean(false);
    related(w, "coordinator", l.of_cluster() + "/brokers/" + std::to_string(coordinator));
    related(w, "consumers", self + "/consumers");
    related(w, "lag_summary", self + "/lag-summary");
    w.end_object();
}

/// The group of the path (its DESCRIBE checked by the router's guard), or the answer (a
/// cluster id that is not this one, a group that does not exist, a backend error).
boost::asio::awaitable<std::variant<api::group_view, http_response>> find_v3_group(
    rest_context* rc, const http_request_context& ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    const std::string g(*ctx.params.get("consumer_group_id"));
    auto view = co_await rc->admin().describe_group(group_id(g));
    if (!view) {
        if (view.error().reason() == api::errc::group_id_not_found) {
            co_return v3_error(code::not_found, "Consumer group " + g + " cannot be found.");
        }
        co_return v3_backend_error(view.error());
    }
    co_return std::move(*view);
}

std::int32_t controller_of(const api::backend_result<api::cluster_info>& c) {
    return c ? c->controller_id : -1;
}

boost::asio::awaitable<handler_result> v3_list_groups(rest_context* rc, http_request_context ctx) {
    if (auto bad = check_cluster(rc, ctx)) {
        co_return std::move(*bad);
    }
    auto listed = co_await rc->admin().list_groups();
    if (!listed) {
        co_return v3_backend_error(listed.error());
    }
    const auto cluster = co_await rc->admin().describe_cluster();
    const std::string host = authorizer_host(ctx.peer);
    requester who = rest_requester(ctx);
    who.host = host;
    const auto l = links_for(rc, ctx);
    json::writer w;
    w.start_object();
    w.field("kind", "KafkaConsumerGroupList");
    list_metadata(w, l.of_cluster() + "/consumer-groups");
    w.key("data");
    w.start_array();
    for (const auto& g : *listed) {
        if (!may_describe_group(rc, who, g.group_id.value)) {
            continue;
        }
        auto view = co_await rc->admin().describe_group(g.group_id);
        if (view) {
            write_group(w, l, *view, controller_of(cluster));
        }
    }
    w.end_array();
    w.end_object();
    co_return v3_ok(w.str());
}

boost::asio::awaitable<handler_result> v3_get_group(rest_context* rc, http_request_context ctx) {
    auto found = co_await find_v3_group(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const auto cluster = co_await rc->admin().describe_cluster();
    json::writer w;
    write_group(w, links_for(rc, ctx), std::get<api::group_view>(found), controller_of(cluster));
    co_return v3_ok(w.str());
}

void write_consumer(json::writer& w, const v3_links& l, const api::group_view& g,
                    const api::group_view::member& m) {
    const std::string self = l.of_group(g.group_id.value) + "/consumers/" + url_segment(m.member_id);
    w.start_object();
    w.field("kind", "KafkaConsumer");
    metadata(w, self, l.crn() + "/consumer-group=" + g.group_id.value + "/consumer=" + m.member_id);
    w.field("cluster_id", l.cluster);
    w.field("consumer_group_id", g.group_id.value);
    w.field("consumer_id", m.member_id);
    if (m.instance_id) {
        w.field("instance_id", *m.instance_id);
    } else {
        w.null_field("instance_id");
    }
    w.field("client_id", m.client_id);
    related(w, "assignments", self + "/assignments");
    w.end_object();
}

/// One partition of a member's assignment (ConsumerAssignmentData).
void write_assignment(json::writer& w, const v3_links& l, const api::group_view& g,
                      const api::group_view::member& m, std::string_view topic,
                      std::int32_t partition) {
    const std::string group_url = l.of_group(g.group_id.value);
    const std::string p = std::to_string(partition);
    w.start_object();
    w.field("kind", "KafkaConsumerAssignment");
    metadata(w,
             group_url + "/consumers/" + url_segment(m.member_id) + "/assignments/" +
                 url_segment(topic) + "/partitions/" + p,
             l.crn() + "/consumer-group=" + g.group_id.value + "/consumer=" + m.member_id +
                 "/assignment=" + std::string(topic) + "/partition=" + p);
    w.field("cluster_id", l.cluster);
    w.field("consumer_group_id", g.group_id.value);
    w.field("consumer_id", m.member_id);
    w.field("topic_name", topic);
    w.field("partition_id", partition);
    related(w, "partition", l.of_topic(topic) + "/partitions/" + p);
    related(w, "lag", group_url + "/lags/" + url_segment(topic) + "/partitions/" + p);
    w.end_object();
}

/// The member of the path in `g`, or null.
const api::group_view::member* find_member(const api::group_view& g,
                                           const http_request_context& ctx) {
    const std::string_view id = *ctx.params.get("consumer_id");
    for (const auto& m : g.members) {
        if (m.member_id == id) {
            return &m;
        }
    }
    return nullptr;
}

http_response unknown_consumer(const http_request_context& ctx) {
    return v3_error(code::not_found,
                    "Consumer " + std::string(*ctx.params.get("consumer_id")) + " cannot be found.");
}

boost::asio::awaitable<handler_result> v3_list_consumers(rest_context* rc,
                                                         http_request_context ctx) {
    auto found = co_await find_v3_group(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const auto& g = std::get<api::group_view>(found);
    const auto l = links_for(rc, ctx);
    const std::string group_url = l.of_group(g.group_id.value);
    const auto items = [&](json::writer& w) {
        for (const auto& m : g.members) {
            write_consumer(w, l, g, m);
        }
    };
    co_return v3_ok(v3_list_body("KafkaConsumerList", group_url + "/consumers", items));
}

/// The member holding each partition (by the members' assignments).
std::map<std::pair<std::string, std::int32_t>, const api::group_view::member*> holders_of(
    const api::group_view& g) {
    std::map<std::pair<std::string, std::int32_t>, const api::group_view::member*> out;
    for (const auto& m : g.members) {
        for (const auto& [topic, parts] : m.assignment) {
            for (const auto p : parts) {
                out[{topic.value, p.value}] = &m;
            }
        }
    }
    return out;
}

/// The member holding a partition (null: none): `prefix`consumer_id, instance_id, client_id.
void write_holder(json::writer& w, const api::group_view::member* m,
                  const std::string& prefix = {}) {
    w.field(prefix + "consumer_id", m ? std::string_view(m->member_id) : std::string_view());
    if (m && m->instance_id) {
        w.field(prefix + "instance_id", *m->instance_id);
    } else {
        w.null_field(prefix + "instance_id");
    }
    w.field(prefix + "client_id", m ? std::string_view(m->client_id) : std::string_view());
}

using partition_holders =
    std::map<std::pair<std::string, std::int32_t>, const api::group_view::member*>;

/// The REST Proxy's lag rows: the partitions with a committed offset and a log end (a
/// partition with nothing committed has no lag to show, not a lag of 0).
std::vector<const api::group_view::partition*> committed_partitions(const api::group_view& g) {
    std::vector<const api::group_view::partition*> out;
    for (const auto& p : g.offsets) {
        if (p.committed.value >= 0 && p.log_end.value >= 0) {
            out.push_back(&p);
        }
    }
    return out;
}

/// A group with no committed offsets has no lags: the REST Proxy's 404.
http_response no_committed_offsets(const api::group_view& g) {
    return v3_error(code::not_found, "Consumer group " + g.group_id.value +
                                         " has no committed offsets, so no lag.");
}

void write_lag(json::writer& w, const v3_links& l, const api::group_view& g,
               const api::group_view::partition& p, const partition_holders& holders) {
    const std::string self = l.of_group(g.group_id.value) + "/lags/" +
                             url_segment(p.topic.value) + "/partitions/" +
                             std::to_string(p.partition.value);
    w.start_object();
    w.field("kind", "KafkaConsumerLag");
    metadata(w, self,
             l.crn() + "/consumer-group=" + g.group_id.value + "/lag=" + p.topic.value +
                 "/partition=" + std::to_string(p.partition.value));
    w.field("cluster_id", l.cluster);
    w.field("consumer_group_id", g.group_id.value);
    w.field("topic_name", p.topic.value);
    w.field("partition_id", p.partition.value);
    w.field("current_offset", p.committed.value);
    w.field("log_end_offset", p.log_end.value);
    w.field("lag", p.lag);
    auto it = holders.find({p.topic.value, p.partition.value});
    write_holder(w, it == holders.end() ? nullptr : it->second);
    w.end_object();
}

boost::asio::awaitable<handler_result> v3_get_consumer(rest_context* rc,
                                                       http_request_context ctx) {
    auto found = co_await find_v3_group(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const auto& g = std::get<api::group_view>(found);
    const auto* m = find_member(g, ctx);
    if (m == nullptr) {
        co_return unknown_consumer(ctx);
    }
    json::writer w;
    write_consumer(w, links_for(rc, ctx), g, *m);
    co_return v3_ok(w.str());
}

boost::asio::awaitable<handler_result> v3_list_assignments(rest_context* rc,
                                                           http_request_context ctx) {
    auto found = co_await find_v3_group(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const auto& g = std::get<api::group_view>(found);
    const auto* m = find_member(g, ctx);
    if (m == nullptr) {
        co_return unknown_consumer(ctx);
    }
    const auto l = links_for(rc, ctx);
    const auto items = [&](json::writer& w) {
        for (const auto& [topic, parts] : m->assignment) {
            for (const auto p : parts) {
                write_assignment(w, l, g, *m, topic.value, p.value);
            }
        }
    };
    co_return v3_ok(v3_list_body(
        "KafkaConsumerAssignmentList",
        l.of_group(g.group_id.value) + "/consumers/" + url_segment(m->member_id) + "/assignments",
        items));
}

boost::asio::awaitable<handler_result> v3_get_assignment(rest_context* rc,
                                                         http_request_context ctx) {
    auto found = co_await find_v3_group(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const auto& g = std::get<api::group_view>(found);
    const auto* m = find_member(g, ctx);
    if (m == nullptr) {
        co_return unknown_consumer(ctx);
    }
    const std::string_view topic = *ctx.params.get("topic_name");
    const auto partition = parse_partition(*ctx.params.get("partition_id"));
    for (const auto& [t, parts] : m->assignment) {
        if (partition && t.value == topic &&
            std::find(parts.begin(), parts.end(), partition_id(*partition)) != parts.end()) {
            json::writer w;
            write_assignment(w, links_for(rc, ctx), g, *m, topic, *partition);
            co_return v3_ok(w.str());
        }
    }
    co_return v3_error(code::not_found, "Consumer assignment " + std::string(topic) + "-" +
                                            std::string(*ctx.params.get("partition_id")) +
                                            " cannot be found.");
}

boost::asio::awaitable<handler_result> v3_get_lag(rest_context* rc, http_request_context ctx) {
    auto found = co_await find_v3_group(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const auto& g = std::get<api::group_view>(found);
    const std::string topic(*ctx.params.get("topic_name"));
    const auto partition = parse_partition(*ctx.params.get("partition_id"));
    for (const auto* p : committed_partitions(g)) {
        if (partition && p->topic.value == topic && p->partition.value == *partition) {
            json::writer w;
            write_lag(w, links_for(rc, ctx), g, *p, holders_of(g));
            co_return v3_ok(w.str());
        }
    }
    co_return v3_error(code::not_found, "Consumer lag of " + topic + "-" +
                                            std::string(*ctx.params.get("partition_id")) +
                                            " cannot be found.");
}

boost::asio::awaitable<handler_result> v3_list_lags(rest_context* rc, http_request_context ctx) {
    auto found = co_await find_v3_group(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const auto& g = std::get<api::group_view>(found);
    const auto committed = committed_partitions(g);
    if (committed.empty()) {
        co_return no_committed_offsets(g);
    }
    const auto holders = holders_of(g);
    const auto l = links_for(rc, ctx);
    const std::string group_url = l.of_group(g.group_id.value);
    const auto items = [&](json::writer& w) {
        for (const auto* p : committed) {
            write_lag(w, l, g, *p, holders);
        }
    };
    co_return v3_ok(v3_list_body("KafkaConsumerLagList", group_url + "/lags", items));
}

boost::asio::awaitable<handler_result> v3_lag_summary(rest_context* rc, http_request_context ctx) {
    auto found = co_await find_v3_group(rc, ctx);
    if (auto* bad = std::get_if<http_response>(&found)) {
        co_return std::move(*bad);
    }
    const auto& g = std::get<api::group_view>(found);
    const auto committed = committed_partitions(g);
    if (committed.empty()) {
        co_return no_committed_offsets(g);
    }
    const auto holders = holders_of(g);
    const api::group_view::partition* max = nullptr;
    std::int64_t total = 0;
    for (const auto* p : committed) {
        if (p->lag > 0) {
            total += p->lag;
        }
        if (max == nullptr || p->lag > max->lag) {
            max = p;
        }
    }
    const auto l = links_for(rc, ctx);
    const std::string group_url = l.of_group(g.group_id.value);
    json::writer w;
    w.start_object();
    w.field("kind", "KafkaConsumerGroupLagSummary");
    metadata(w, group_url + "/lag-summary",
             l.crn() + "/consumer-group=" + g.group_id.value + "/lag-summary");
    w.field("cluster_id", l.cluster);
    w.field("consumer_group_id", g.group_id.value);
    const api::group_view::member* holder = nullptr;
    if (max != nullptr) {
        auto it = holders.find({max->topic.value, max->partition.value});
        holder = it == holders.end() ? nullptr : it->second;
    }
    write_holder(w, holder, "max_lag_");
    w.field("max_lag_topic_name", max ? std::string_view(max->topic.value) : "");
    w.field("max_lag_partition_id", max ? max->partition.value : 0);
    w.field("max_lag", max ? std::max<std::int64_t>(max->lag, 0) : 0);
    w.field("total_lag", total);
    // Required by the openapi: with no member holding the partition, the REST Proxy's link
    // names the empty consumer id too.
    std::string holder_segment;
    if (holder != nullptr) {
        holder_segment = url_segment(holder->member_id);
    }
    related(w, "max_lag_consumer", group_url + "/consumers/" + holder_segment);
    if (max) {
        related(w, "max_lag_partition", l.of_topic(max->topic.value) + "/partitions/" +
                                            std::to_string(max->partition.value));
    }
    w.end_object();
    co_return v3_ok(w.str());
}

}  // namespace

void add_v3_group_routes(router& routes, rest_context& ctx) {
    auto bind = [rc = &ctx](auto fn) {
        return [rc, fn](http_request_context c) { return fn(rc, std::move(c)); };
    };
    const std::string cluster = "/v3/clusters/{cluster_id}";
    const std::string group = cluster + "/consumer-groups/{consumer_group_id}";
    routes.add(verb::get, cluster + "/consumer-groups", bind(v3_list_groups));
    routes.add(verb::get, group, bind(v3_get_group));
    routes.add(verb::get, group + "/consumers", bind(v3_list_consumers));
    routes.add(verb::get, group + "/consumers/{consumer_id}", bind(v3_get_consumer));
    routes.add(verb::get, group + "/consumers/{consumer_id}/assignments",
               bind(v3_list_assignments));
    routes.add(verb::get,
               group + "/consumers/{consumer_id}/assignments/{topic_name}/partitions/{partition_id}",
               bind(v3_get_assignment));
    routes.add(verb::get, group + "/lags", bind(v3_list_lags));
    routes.add(verb::get, group + "/lags/{topic_name}/partitions/{partition_id}",
               bind(v3_get_lag));
    routes.add(verb::get, group + "/lag-summary", bind(v3_lag_summary));
}

}  // namespace sluice::gateway::rest
