#include "gateway/http/group_routes.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include <fmt/format.h>

#include "backend/api/groups.h"
#include "gateway/http/http_auth.h"
#include "gateway/http/rest/rest_support.h"
#include "gateway/core/metrics.h"

namespace sluice::gateway {
namespace bgroup = backend::api;

namespace {

constexpr std::string_view prefix = "/v1/groups";

std::string json_optional(const std::optional<std::string>& s) {
    return s ? json_quote(*s) : "null";
}

std::int64_t total_lag(const bgroup::group_view& g) {
    std::int64_t lag = 0;
    for (const auto& p : g.offsets) {
        if (p.lag > 0) {
            lag += p.lag;
        }
    }
    return lag;
}

std::string summary_json(const bgroup::group_view& g) {
    return fmt::format(
        "{{\"group_id\":{},\"type\":{},\"state\":{},\"protocol_type\":{},\"protocol\":{},"
        "\"generation\":{},\"members\":{},\"lag\":{}}}",
        json_quote(g.group_id.value), json_quote(g.type), json_quote(g.state),
        json_quote(g.protocol_type), json_quote(g.protocol), g.generation, g.members.size(),
        total_lag(g));
}

std::string detail_json(const bgroup::group_view& g) {
    std::string members;
    for (const auto& m : g.members) {
        std::string assignment;
        for (const auto& [topic, parts] : m.assignment) {
            std::string list;
            for (auto p : parts) {
                list += (list.empty() ? "" : ",") + std::to_string(p.value);
            }
            assignment += fmt::format("{}{{\"topic\":{},\"partitions\":[{}]}}",
                                      assignment.empty() ? "" : ",", json_quote(topic.value), list);
        }
        members += fmt::format(
            "{}{{\"member_id\":{},\"instance_id\":{},\"client_id\":{},\"client_host\":{},"
            "\"assignment\":[{}]}}",
            members.empty() ? "" : ",", json_quote(m.member_id), json_optional(m.instance_id),
            json_quote(m.client_id), json_quote(m.client_host), assignment);
    }
    std::string offsets;
    for (const auto& p : g.offsets) {
        offsets += fmt::format(
            "{}{{\"topic\":{},\"partition\":{},\"committed_offset\":{},\"log_end_offset\":{},"
            "\"lag\":{},\"metadata\":{}}}",
            offsets.empty() ? "" : ",", json_quote(p.topic.value), p.partition.value,
            p.committed.value, p.log_end.value, p.lag, json_optional(p.metadata));
    }
    return fmt::format(
        "{{\"group_id\":{},\"type\":{},\"state\":{},\"protocol_type\":{},\"protocol\":{},"
        "\"generation\":{},\"lag\":{},\"members\":[{}],\"offsets\":[{}]}}",
        json_quote(g.group_id.value), json_quote(g.type), json_quote(g.state),
        json_quote(g.protocol_type), json_quote(g.protocol), g.generation, total_lag(g),
        members, offsets);
}

http_answer error_answer(unsigned status, const std::string& message) {
    return {status, "application/json",
            fmt::format("{{\"error_code\":{},\"message\":{}}}", status, json_quote(message))};
}

}  // namespace

boost::asio::awaitable<std::optional<http_answer>> group_route(bgroup::admin& admin,
                                                               std::string method,
                                                               std::string path,
                                                               group_filter visible) {
    if (path.compare(0, prefix.size(), prefix) != 0 ||
        (path.size() > prefix.size() && path[prefix.size()] != '/')) {
        co_return std::nullopt;
    }
    if (method != "GET") {
        co_return error_answer(405, "use GET");
    }
    std::string_view rest = std::string_view(path).substr(prefix.size());
    if (rest.empty() || rest == "/") {
        auto listed = co_await admin.list_groups();
        if (!listed) {
            co_return error_answer(503, "groups cannot be listed: " + listed.error().text());
        }
        std::string body;
        for (const auto& l : *listed) {
            if (visible && !visible(l.group_id.value)) {
                continue;
            }
            auto view = co_await admin.describe_group(l.group_id);
            if (!view) {
                continue;  // gone since the listing
            }
            body += (body.empty() ? "" : ",") + summary_json(*view);
        }
        co_return http_answer{200, "application/json", "{\"groups\":[" + body + "]}"};
    }
    rest.remove_prefix(1);
    if (rest.find('/') != std::string_view::npos) {
        co_return error_answer(404, "no route for GET " + path);
    }
    auto id = percent_decode(rest);
    if (!id) {
        co_return error_answer(400, "malformed group id in the path");
    }
    auto view = co_await admin.describe_group(group_id(*id));
    if (!view) {
        if (view.error().reason() == bgroup::errc::group_id_not_found) {
            co_return error_answer(404, "group " + *id + " not found");
        }
        co_return error_answer(503, "group " + *id + " cannot be described: " +
                                        view.error().text());
    }
    co_return http_answer{200, "application/json", detail_json(*view)};
}

namespace {

boost::asio::awaitable<handler_result> serve_group_route(bgroup::admin* admin,
                                                         policy_chain chain,
                                                         http_request_context ctx) {
    group_filter visible;
    const std::string host = chain.authorizing() ? authorizer_host(ctx.peer) : std::string();
    requester who = http_requester(ctx, policy_front::console);
    who.host = host;
    if (chain.authorizing() && !chain.visible(who, auth::acl_operation::describe,
                                              auth::resource_type::cluster,
                                              auth::cluster_resource_name)) {
        visible = [chain, who](std::string_view group) {
            return chain.visible(who, auth::acl_operation::describe, auth::resource_type::group,
                                 group);
        };
    }
    // Only GET (and HEAD, which the router answers from GET) reaches here.
    auto answer = co_await group_route(*admin, "GET", ctx.path, std::move(visible));
    co_return make_response(answer ? std::move(*answer)
                                   : error_answer(404, "no route for GET " + ctx.path));
}

}  // namespace

void add_group_routes(router& routes, bgroup::admin& admin, policy_chain chain) {
    auto handler = [g = &admin, chain](http_request_context ctx) {
        return serve_group_route(g, chain, std::move(ctx));
    };
    routes.add(boost::beast::http::verb::get, "/v1/groups", handler);
    routes.add(boost::beast::http::verb::get, "/v1/groups/{path...}", handler);
}

void render_group_metrics(bgroup::groups& groups, std::string& out) {
    const auto views = groups.view_groups();
    out += "# HELP sluice_consumer_group_lag Records between a group's committed offset and the "
           "partition's high watermark\n# TYPE sluice_consumer_group_lag gauge\n";
    for (const auto& g : views) {
        for (const auto& p : g.offsets) {
            if (p.lag < 0) {
                continue;
            }
            out += fmt::format("sluice_consumer_group_lag{{{}}} {}\n",
                               metrics_registry::format_labels({{"group", g.group_id.value},
                                                                {"topic", p.topic.value},
                                                                {"partition",
                                                                 std::to_string(p.partition.value)}}),
                               p.lag);
        }
    }
    // Lag in time: the age of the oldest record not consumed; and that age as a fraction of
    // the partition's retention.ms (at 1 the group starts to lose records to retention).
    const std::int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
    std::string ratios;
    out += "# HELP sluice_consumer_group_lag_seconds Age of the oldest record a group has not "
           "consumed (0 without lag)\n# TYPE sluice_consumer_group_lag_seconds gauge\n";
    for (const auto& g : views) {
        for (const auto& p : g.offsets) {
            if (p.lag < 0) {
                continue;
            }
            double seconds = 0;
            if (p.lag > 0) {
                if (p.oldest_unconsumed_timestamp < 0) {
                    continue;
                }
                seconds = static_cast<double>(std::max<std::int64_t>(
                              0, now_ms - p.oldest_unconsumed_timestamp)) /
                          1000.0;
            }
            const std::string labels = metrics_registry::format_labels(
                {{"group", g.group_id.value},
                 {"topic", p.topic.value},
                 {"partition", std::to_string(p.partition.value)}});
            out += fmt::format("sluice_consumer_group_lag_seconds{{{}}} {}\n", labels, seconds);
            if (p.retention_ms > 0) {
                ratios += fmt::format("sluice_consumer_group_lag_retention_ratio{{{}}} {}\n",
                                      labels, seconds * 1000.0 /
                                                  static_cast<double>(p.retention_ms));
            }
        }
    }
    out += "# HELP sluice_consumer_group_lag_retention_ratio A group's lag in seconds as a "
           "fraction of the partition's retention.ms\n"
           "# TYPE sluice_consumer_group_lag_retention_ratio gauge\n";
    out += ratios;
    out += "# HELP sluice_consumer_group_committed_offset A group's committed offset per "
           "partition\n# TYPE sluice_consumer_group_committed_offset gauge\n";
    for (const auto& g : views) {
        for (const auto& p : g.offsets) {
            out += fmt::format("sluice_consumer_group_committed_offset{{{}}} {}\n",
                               metrics_registry::format_labels({{"group", g.group_id.value},
                                                                {"topic", p.topic.value},
                                                                {"partition",
                                                                 std::to_string(p.partition.value)}}),
                               p.committed.value);
        }
    }
    out += "# HELP sluice_consumer_group_members Members of each consumer group\n"
           "# TYPE sluice_consumer_group_members gauge\n";
    std::map<std::pair<std::string, std::string>, int> by_state;
    for (const auto& g : views) {
        out += fmt::format("sluice_consumer_group_members{{{}}} {}\n",
                           metrics_registry::format_labels(
                               {{"group", g.group_id.value}, {"type", g.type}, {"state", g.state}}),
                           g.members.size());
        ++by_state[{g.type, g.state}];
    }
    out += "# HELP sluice_consumer_groups Consumer groups by type and state\n"
           "# TYPE sluice_consumer_groups gauge\n";
    for (const auto& [key, n] : by_state) {
        out += fmt::format("sluice_consumer_groups{{{}}} {}\n",
                           metrics_registry::format_labels({{"type", key.first},
                                                            {"state", key.second}}),
                           n);
    }
    out += fmt::format(
        "# HELP sluice_consumer_group_rebalances_total Rebalances completed (classic generations "
        "and KIP-848 target assignments)\n# TYPE sluice_consumer_group_rebalances_total counter\n"
        "sluice_consumer_group_rebalances_total {}\n"
        "# HELP sluice_consumer_group_offset_commits_total Partition offsets committed\n"
        "# TYPE sluice_consumer_group_offset_commits_total counter\n"
        "sluice_consumer_group_offset_commits_total {}\n",
        groups.counters().rebalances, groups.counters().offset_commits);
}

}  // namespace sluice::gateway
