#include "gateway/http/ui_routes.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

#include "backend/api/client.h"
#include "backend/api/errc.h"
#include "backend/api/queues.h"
#include "gateway/core/version.h"
#include "gateway/http/error_mapping.h"
#include "gateway/http/http_auth.h"
#include "gateway/http/json.h"
#include "gateway/http/rest/rest_support.h"
#include "gateway/httpcore/logger.h"
#include "gateway/policy/front_acls.h"

namespace sluice::gateway {
namespace asio = boost::asio;
namespace http = boost::beast::http;

namespace {

constexpr std::string_view ui_prefix = "/ui/";
constexpr std::string_view index_file = "index.html";

/// The embedded files are the binary's own: revalidate every time (the ETag makes it cheap),
/// so a new binary's files are never hidden behind a stale cached copy.
constexpr std::string_view cache_control = "no-cache";

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

/// Beast in Boost 1.74 takes boost::string_view.
boost::beast::string_view beast_view(std::string_view s) { return {s.data(), s.size()}; }

const ui_asset* find_asset(std::span<const ui_asset> assets, std::string_view path) {
    auto it = std::lower_bound(assets.begin(), assets.end(), path,
                               [](const ui_asset& a, std::string_view p) { return a.path < p; });
    return it != assets.end() && it->path == path ? &*it : nullptr;
}

asio::awaitable<handler_result> redirect_to_ui(http_request_context ctx) {
    auto res = make_response({308, "text/plain; charset=utf-8", "see /ui/\n"});
    // Keep the query: /ui?topic=t opens the page on that topic.
    const auto raw = ctx.req.target();
    const std::string_view target(raw.data(), raw.size());
    const auto q = target.find('?');
    std::string location(ui_prefix);
    if (q != std::string_view::npos) {
        location += target.substr(q);
    }
    res.set(http::field::location, location);
    co_return res;
}

asio::awaitable<handler_result> serve_asset(std::span<const ui_asset> assets,
                                            http_request_context ctx) {
    const auto raw = ctx.params.get("path").value_or("");
    auto path = percent_decode(raw);
    if (!path) {
        co_return error_response(400, "malformed percent-encoding in the path");
    }
    if (path->empty()) {
        *path = index_file;
    }
    const ui_asset* asset = find_asset(assets, *path);
    if (!asset) {
        co_return error_response(404, "no file " + std::string(ui_prefix) + *path);
    }
    const auto inm = ctx.req[http::field::if_none_match];
    http_response res;
    if (!inm.empty() && etag_matches(std::string_view(inm.data(), inm.size()), asset->etag)) {
        res = http_response{http::status::not_modified, 11};
    } else {
        res = make_response({200, std::string(ui_content_type(asset->path)),
                             std::string(asset->body)});
    }
    res.set(http::field::etag, beast_view(asset->etag));
    res.set(http::field::cache_control, beast_view(cache_control));
    res.set("X-Content-Type-Options", "nosniff");
    co_return res;
}

constexpr std::string_view console_index = "console/index.html";

/// The q of one Accept entry's parameters ("q=0.8"): 1 when absent, 0 for a malformed one.
double accept_q(std::string_view params) {
    while (!params.empty()) {
        const auto semi = params.find(';');
        const auto param = trim(params.substr(0, semi));
        if (param.size() > 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
            const std::string text(param.substr(2));
            char* end = nullptr;
            const double q = std::strtod(text.c_str(), &end);
            return end == text.c_str() + text.size() && q >= 0 && q <= 1 ? q : 0;
        }
        if (semi == std::string_view::npos) {
            break;
        }
        params.remove_prefix(semi + 1);
    }
    return 1;
}

asio::awaitable<handler_result> serve_console(std::span<const ui_asset> assets,
                                              std::shared_ptr<route_handler> fallback,
                                              http_request_context ctx) {
    const auto accept = ctx.req[http::field::accept];
    const ui_asset* asset = find_asset(assets, console_index);
    if (!asset || !accept_prefers_html(std::string_view(accept.data(), accept.size()))) {
        if (*fallback) {
            co_return co_await (*fallback)(std::move(ctx));
        }
        co_return error_response(404, "no route for GET /");
    }
    auto res = make_response({200, "text/html; charset=utf-8", std::string(asset->body)});
    res.set(http::field::etag, beast_view(asset->etag));
    res.set(http::field::cache_control, beast_view(cache_control));
    // One URL, two representations: caches must key on Accept.
    res.set(http::field::vary, "Accept");
    res.set("X-Content-Type-Options", "nosniff");
    co_return res;
}

}  // namespace

bool accept_prefers_html(std::string_view accept) {
    double html = 0;
    double json = 0;
    while (!accept.empty()) {
        const auto comma = accept.find(',');
        const auto entry = trim(accept.substr(0, comma));
        const auto semi = entry.find(';');
        std::string type(trim(entry.substr(0, semi)));
        std::transform(type.begin(), type.end(), type.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        const double q =
            accept_q(semi == std::string_view::npos ? std::string_view{} : entry.substr(semi + 1));
        if (type == "text/html" || type == "application/xhtml+xml") {
            html = std::max(html, q);
        } else if (type == "application/json" ||
                   (type.starts_with("application/vnd.") && type.ends_with("+json"))) {
            json = std::max(json, q);
        }
        if (comma == std::string_view::npos) {
            break;
        }
        accept.remove_prefix(comma + 1);
    }
    return html > 0 && html >= json;
}

std::string_view ui_content_type(std::string_view path) {
    static constexpr std::array<std::pair<std::string_view, std::string_view>, 12> types{{
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".json", "application/json"},
        {".map", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".txt", "text/plain; charset=utf-8"},
        {".woff2", "font/woff2"},
        {".webmanifest", "application/manifest+json"},
    }};
    const auto slash = path.rfind('/');
    const auto name = slash == std::string_view::npos ? path : path.substr(slash + 1);
    const auto dot = name.rfind('.');
    if (dot != std::string_view::npos) {
        const auto ext = name.substr(dot);
        for (const auto& [e, type] : types) {
            if (e == ext) {
                return type;
            }
        }
    }
    return "application/octet-stream";
}

bool etag_matches(std::string_view if_none_match, std::string_view etag) {
    const auto bare = [](std::string_view tag) {
        return tag.starts_with("W/") ? tag.substr(2) : tag;
    };
    if (trim(if_none_match) == "*") {
        return true;
    }
    while (!if_none_match.empty()) {
        const auto comma = if_none_match.find(',');
        const auto tag = trim(if_none_match.substr(0, comma));
        if (!tag.empty() && bare(tag) == bare(etag)) {
            return true;
        }
        if (comma == std::string_view::npos) {
            break;
        }
        if_none_match.remove_prefix(comma + 1);
    }
    return false;
}

void add_console_route(router& routes, std::span<const ui_asset> assets) {
    // The previous GET / goes into the new handler; the slot is filled in right after.
    auto fallback = std::make_shared<route_handler>();
    auto handler = [assets, fallback](http_request_context ctx) {
        return serve_console(assets, fallback, std::move(ctx));
    };
    auto previous = routes.replace(http::verb::get, "/", std::move(handler));
    if (previous) {
        *fallback = std::move(*previous);
    }
}

void add_ui_routes(router& routes, std::span<const ui_asset> assets) {
    routes.add(http::verb::get, "/ui", redirect_to_ui);
    routes.add(http::verb::get, "/ui/{path...}", [assets](http_request_context ctx) {
        return serve_asset(assets, std::move(ctx));
    });
}

}  // namespace sluice::gateway

// --- the console's own routes ---------------------------------------------------------------

namespace sluice::gateway {
namespace {

namespace capi = backend::api;

http_response console_json(unsigned status, std::string body) {
    return make_response({status, "application/json", std::move(body)});
}

/// A backend error as the console's error body: the REST mapping's status, the text of what.
http_response console_backend_error(const capi::backend_error& e, std::string_view what,
                                    rest::subject about = rest::subject::topic) {
    if (e.reason() == capi::errc::non_empty_group) {
        return error_response(409, std::string(what) +
                                       ": the group has members (stop its consumers first)");
    }
    if (e.reason() == capi::errc::group_id_not_found) {
        return error_response(404, std::string(what) + ": no such group");
    }
    const auto mapped = rest::from_backend(e, about);
    return error_response(rest::http_status(mapped.code), std::string(what) + ": " + e.text());
}

asio::awaitable<handler_result> console_overview(const console_services* svc,
                                                 http_request_context) {
    auto cluster = co_await svc->admin.describe_cluster();
    json::writer w;
    w.start_object();
    w.field("version", sluice_version_text());
    w.field("mode", std::string_view(svc->upstream ? "upstream" : "native"));
    w.field("cluster_id", cluster ? std::string_view(cluster->cluster_id)
                                  : std::string_view(svc->cluster_id));
    w.field("node_id", std::int64_t{svc->node_id});
    w.key("queues");
    w.boolean(svc->queues != nullptr);
    if (cluster) {
        w.field("controller_id", std::int64_t{cluster->controller_id});
        w.key("brokers");
        w.start_array();
        for (const auto& b : cluster->brokers) {
            w.start_object();
            w.field("node_id", std::int64_t{b.node_id});
            w.field("host", b.host);
            w.field("port", std::int64_t{b.port});
            if (b.rack) {
                w.field("rack", *b.rack);
            } else {
                w.null_field("rack");
            }
            w.end_object();
        }
        w.end_array();
    } else {
        w.key("brokers");
        w.start_array();
        w.end_array();
        w.field("brokers_error", cluster.error().text());
    }
    w.end_object();
    co_return console_json(200, w.str());
}

/// The body of POST /v1/console/groups/{group}/reset-offsets.
struct reset_request {
    std::string topic;
    std::string to;
    std::int64_t timestamp = -1;
    std::int64_t offset = -1;
    std::vector<std::int32_t> partitions;  // empty: every partition of the topic
};

std::variant<reset_request, std::string> parse_reset_request(std::string_view body) {
    json::document doc;
    if (auto err = json::parse(body, doc)) {
        return "the body is not JSON: " + *err;
    }
    if (!doc.IsObject()) {
        return std::string("the body must be a JSON object");
    }
    reset_request r;
    for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
        const std::string_view name = json::as_view(it->name);
        if (name != "topic" && name != "to" && name != "timestamp" && name != "offset" &&
            name != "partitions") {
            return "unknown field " + std::string(name) +
                   " (topic, to, timestamp, offset, partitions)";
        }
    }
    const auto topic = json::get_string(doc, "topic");
    if (!topic || topic->empty()) {
        return std::string("topic (a topic name) is required");
    }
    r.topic = std::string(*topic);
    const auto to = json::get_string(doc, "to");
    if (!to || (*to != "earliest" && *to != "latest" && *to != "timestamp" && *to != "offset")) {
        return std::string("to must be \"earliest\", \"latest\", \"timestamp\" or \"offset\"");
    }
    r.to = std::string(*to);
    if (r.to == "timestamp") {
        const auto ts = json::get_int(doc, "timestamp");
        if (!ts || *ts < 0) {
            return std::string("timestamp (milliseconds since the epoch, >= 0) is required with "
                               "to=timestamp");
        }
        r.timestamp = *ts;
    }
    if (r.to == "offset") {
        const auto off = json::get_int(doc, "offset");
        if (!off || *off < 0) {
            return std::string("offset (>= 0) is required with to=offset");
        }
        r.offset = *off;
    }
    if (const auto* parts = json::member(doc, "partitions")) {
        if (!parts->IsArray()) {
            return std::string("partitions must be an array of partition numbers");
        }
        for (const auto& p : parts->GetArray()) {
            if (!p.IsInt() || p.GetInt() < 0) {
                return std::string("partitions must be an array of partition numbers");
            }
            r.partitions.push_back(p.GetInt());
        }
    }
    return r;
}

asio::awaitable<handler_result> console_reset_offsets(const console_services* svc,
                                                      http_request_context ctx) {
    auto raw_group = percent_decode(ctx.params.get("group").value_or(""));
    if (!raw_group || raw_group->empty()) {
        co_return error_response(400, "malformed group id in the path");
    }
    const std::string group = std::move(*raw_group);
    auto parsed = parse_reset_request(ctx.req.body());
    if (auto* message = std::get_if<std::string>(&parsed)) {
        co_return error_response(400, *message);
    }
    const auto req = std::get<reset_request>(std::move(parsed));
    // READ on the group is the guard's; READ on the topic here (Kafka's OffsetCommit).
    if (svc->chain.authorizing()) {
        const acl_checks checks{acl_check{.op = auth::acl_operation::read,
                                          .type = auth::resource_type::topic,
                                          .name = req.topic}};
        if (auto denied = refused_check(svc->chain, http_requester(ctx, policy_front::console),
                                        "POST /v1/console/groups/{group}/reset-offsets",
                                        checks)) {
            co_return rest::acl_denied(*denied, false);
        }
    }
    auto view = co_await svc->admin.describe_group(group_id(group));
    if (view && !view->members.empty()) {
        co_return error_response(409, "group " + group + " has " +
                                          std::to_string(view->members.size()) +
                                          " member(s): offsets can be reset only for an empty "
                                          "group (stop its consumers first)");
    }
    auto topic = co_await svc->admin.describe_topic(topic_name(req.topic));
    if (!topic) {
        co_return console_backend_error(topic.error(), "topic " + req.topic);
    }
    std::vector<std::int32_t> parts = req.partitions;
    if (parts.empty()) {
        for (const auto& p : topic->partitions) {
            parts.push_back(p.partition.value);
        }
    }
    for (auto p : parts) {
        if (p >= static_cast<std::int32_t>(topic->partitions.size())) {
            co_return error_response(400, "topic " + req.topic + " has no partition " +
                                              std::to_string(p));
        }
    }
    // Each partition's bounds, and the timestamp's offset when asked.
    using spec = capi::offset_spec;
    std::vector<capi::offset_query> queries;
    for (auto p : parts) {
        queries.push_back({topic_name(req.topic), partition_id(p), spec{spec::kind::earliest}});
        queries.push_back({topic_name(req.topic), partition_id(p), spec{spec::kind::latest}});
        if (req.to == "timestamp") {
            queries.push_back({topic_name(req.topic), partition_id(p),
                               spec{spec::kind::timestamp, req.timestamp}});
        }
    }
    const auto found = co_await svc->admin.list_offsets(std::move(queries),
                                                         capi::isolation::read_uncommitted);
    const std::size_t per = req.to == "timestamp" ? 3 : 2;
    std::vector<capi::offset_commit> commits;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        for (std::size_t k = 0; k < per; ++k) {
            const auto& f = found.at(i * per + k);
            if (f.error) {
                co_return console_backend_error(f.error, "offsets of " + req.topic + "/" +
                                                             std::to_string(parts[i]));
            }
        }
        const std::int64_t earliest = found[i * per].off.value;
        const std::int64_t latest = found[i * per + 1].off.value;
        std::int64_t next = latest;
        if (req.to == "earliest") {
            next = earliest;
        } else if (req.to == "offset") {
            next = std::clamp(req.offset, earliest, latest);
        } else if (req.to == "timestamp") {
            // No record at or after the time: the end, as kafka-consumer-groups does.
            const auto at = found[i * per + 2].off.value;
            next = at < 0 ? latest : at;
        }
        commits.push_back({{topic_name(req.topic), partition_id(parts[i])}, offset(next), {}});
    }
    auto done = co_await svc->admin.alter_committed_offsets(group_id(group), commits);
    if (!done) {
        co_return console_backend_error(done.error(), "offsets of group " + group);
    }
    http_log().info("console: offsets of group {} on {} reset to {}", group, req.topic, req.to);
    json::writer w;
    w.start_object();
    w.field("group_id", group);
    w.key("offsets");
    w.start_array();
    for (const auto& c : commits) {
        w.start_object();
        w.field("topic", c.tp.topic.value);
        w.field("partition", std::int64_t{c.tp.partition.value});
        w.field("offset", c.next.value);
        w.end_object();
    }
    w.end_array();
    w.end_object();
    co_return console_json(200, w.str());
}

/// GET /v1/console/partition-sizes: each partition's log size on its leader (DescribeLogDirs
/// through admin: the native log, or each upstream broker), and the brokers that did not
/// answer with why (their partitions absent).
asio::awaitable<handler_result> console_partition_sizes(const console_services* svc,
                                                        http_request_context) {
    auto sizes = co_await svc->admin.describe_log_dirs();
    if (!sizes) {
        co_return console_backend_error(sizes.error(), "partition sizes");
    }
    auto topics = co_await svc->admin.list_topics();
    if (!topics) {
        co_return console_backend_error(topics.error(), "partition sizes");
    }
    // The replicas by partition (sorted by topic, partition, node).
    std::map<std::pair<std::string, std::int32_t>, std::vector<const capi::replica_log_size*>>
        replicas;
    for (const auto& r : sizes->replicas) {
        replicas[{r.topic.value, r.partition.value}].push_back(&r);
    }
    json::writer w;
    w.start_object();
    w.key("partitions");
    w.start_array();
    for (const auto& t : *topics) {
        for (const auto& p : t.partitions) {
            const auto it = replicas.find({t.name.value, p.partition.value});
            if (it == replicas.end()) {
                continue;
            }
            // The leader's copy is the partition's log; without a leader, the largest copy.
            const capi::replica_log_size* pick = nullptr;
            for (const auto* r : it->second) {
                if (r->node_id == p.leader) {
                    pick = r;
                    break;
                }
            }
            if (pick == nullptr && p.leader < 0) {
                for (const auto* r : it->second) {
                    if (pick == nullptr || r->size_bytes > pick->size_bytes) {
                        pick = r;
                    }
                }
            }
            if (pick == nullptr) {
                continue;  // the leader did not answer: unknown, its failure says why
            }
            w.start_object();
            w.field("topic", t.name.value);
            w.field("partition", std::int64_t{p.partition.value});
            w.field("size_bytes", pick->size_bytes);
            w.field("node_id", std::int64_t{pick->node_id});
            w.end_object();
        }
    }
    w.end_array();
    w.key("unknown");
    w.start_array();
    for (const auto& f : sizes->failures) {
        w.start_object();
        w.field("node_id", std::int64_t{f.node_id});
        w.field("reason", f.reason);
        w.end_object();
    }
    w.end_array();
    w.end_object();
    co_return console_json(200, w.str());
}

asio::awaitable<handler_result> console_delete_group(const console_services* svc,
                                                     http_request_context ctx) {
    auto group = percent_decode(ctx.params.get("group").value_or(""));
    if (!group || group->empty()) {
        co_return error_response(400, "malformed group id in the path");
    }
    auto done = co_await svc->admin.delete_group(group_id(*group));
    if (!done) {
        co_return console_backend_error(done.error(), "group " + *group);
    }
    http_log().info("console: group {} deleted", *group);
    co_return make_response({204, "application/json", ""});
}

asio::awaitable<handler_result> console_purge_queue(const console_services* svc,
                                                    http_request_context ctx) {
    const std::string name(ctx.params.get("queue").value_or(""));
    auto done = co_await svc->queues->purge_queue(capi::queue_name(name));
    if (!done) {
        if (done.error().reason() == capi::errc::queue_does_not_exist) {
            co_return error_response(404, "queue " + name + " not found");
        }
        if (done.error().reason() == capi::errc::purge_queue_in_progress) {
            co_return error_response(409, "queue " + name +
                                              " was purged less than 60 s ago (SQS allows one "
                                              "purge a minute)");
        }
        co_return console_backend_error(done.error(), "purge of queue " + name);
    }
    http_log().info("console: queue {} purged", name);
    co_return make_response({204, "application/json", ""});
}

}  // namespace

void add_console_api_routes(router& routes, console_services svc) {
    auto shared = std::make_shared<const console_services>(std::move(svc));
    auto bind = [shared](auto fn) {
        return [shared, fn](http_request_context ctx) { return fn(shared.get(), std::move(ctx)); };
    };
    routes.add(http::verb::get, "/v1/console/overview", bind(console_overview));
    routes.add(http::verb::get, "/v1/console/partition-sizes", bind(console_partition_sizes));
    routes.add(http::verb::post, "/v1/console/groups/{group}/reset-offsets",
               bind(console_reset_offsets));
    routes.add(http::verb::delete_, "/v1/console/groups/{group}", bind(console_delete_group));
    if (shared->queues != nullptr) {
        routes.add(http::verb::post, "/v1/console/queues/{queue}/purge",
                   bind(console_purge_queue));
    }
}

}  // namespace sluice::gateway
