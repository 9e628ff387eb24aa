// REST Proxy v2 consumers: POST /consumers/{group} creates an instance; under
// /consumers/{group}/instances/{instance}: DELETE (the instance), subscription (POST, GET,
// DELETE), assignments (POST, GET), positions (POST; /beginning, /end), records (GET, long
// poll), offsets (POST commits, GET committed). Answers and errors as the REST Proxy's;
// the body of every instance request is checked before the instance is looked up, as the
// REST Proxy's validation runs before its resource.
#include <array>
#include <charconv>

#include "gateway/http/rest/consumer_registry.h"
#include "gateway/http/rest/rest_routes.h"
#include "protocol/core/uuid.h"

namespace sluice::gateway::rest {
namespace {

using boost::beast::http::verb;
using clock = std::chrono::steady_clock;

/// What the handlers share. Handlers take it by pointer: g++ 12 miscompiles a coroutine
/// taking this small trivially copyable struct by value (its copy in the frame is garbage).
struct consumer_routes_ctx {
    rest_context* rc;
    consumer_registry* registry;
};

/// The 403 when the caller may not `op` one of `topics` (the router's guard checked the group).
template <typename Topics, typename Name>
std::optional<http_response> check_topics(const consumer_routes_ctx* c,
                                          const http_request_context& ctx, auth::acl_operation op,
                                          const Topics& topics, Name name_of) {
    if (!c->rc->chain.authorizing()) {
        return std::nullopt;
    }
    acl_checks checks;
    for (const auto& t : topics) {
        checks.push_back(acl_check{op, auth::resource_type::topic, std::string(name_of(t))});
    }
    return refuse_checks(*c->rc, ctx, checks, true);
}

http_response no_content() {
    http_response res{boost::beast::http::status::no_content, 11};
    return res;
}

http_response v2_ok(std::string body) { return json_response(200, v2_json, std::move(body)); }

/// The content type of a consumer request's body: any v2 media type or generic JSON.
std::optional<http_response> check_content_type(const http_request& req) {
    if (content_media(header(req, "Content-Type")) == media::unsupported) {
        return v2_error(code::unsupported_media_type, std::string(unsupported_media_type_message));
    }
    return std::nullopt;
}

/// Reads [{"topic": "...", "partition": n}] from obj[field].
std::variant<std::vector<topic_partition>, http_response> read_partitions(const json::value& obj,
                                                                         std::string_view field) {
    std::vector<topic_partition> out;
    const json::value* list = json::member(obj, field);
    if (!list || !list->IsArray()) {
        return v2_error(code::invalid_payload,
                        "Payload error. " + std::string(field) + " must be an array");
    }
    for (const auto& v : list->GetArray()) {
        auto topic = json::get_string(v, "topic");
        auto partition = json::get_int(v, "partition");
        if (!topic || topic->empty() || !partition || *partition < 0 || *partition > 2147483647) {
            return v2_error(code::invalid_payload,
                            "Payload error. Every partition needs a topic and a partition number");
        }
        out.push_back({topic_name(std::string(*topic)),
                       partition_id(static_cast<std::int32_t>(*partition))});
    }
    return out;
}

/// A body that is only {"partitions": [...]}: its content type checked, parsed and read.
std::variant<std::vector<topic_partition>, http_response> read_partitions_body(
    const http_request& req) {
    if (auto bad = check_content_type(req)) {
        return std::move(*bad);
    }
    json::document doc;
    if (auto bad = parse_body(req, doc, v2_json)) {
        return std::move(*bad);
    }
    return read_partitions(doc, "partitions");
}

/// An integer field given as a JSON number or a numeric string (the REST Proxy takes both).
std::optional<std::int64_t> int_setting(const json::value& v) {
    if (v.IsInt64()) {
        return v.GetInt64();
    }
    if (v.IsString()) {
        std::int64_t out = 0;
        const auto s = json::as_view(v);
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
        if (ec == std::errc() && p == s.data() + s.size()) {
            return out;
        }
    }
    return std::nullopt;
}

std::optional<bool> bool_setting(const json::value& v) {
    if (v.IsBool()) {
        return v.GetBool();
    }
    if (v.IsString()) {
        const auto s = json::as_view(v);
        if (s == "true") {
            return true;
        }
        if (s == "false") {
            return false;
        }
    }
    return std::nullopt;
}

http_response invalid_config(const std::string& why) {
    return v2_error(code::invalid_consumer_config, "Invalid consumer configuration: " + why);
}

constexpr std::array<const char*, 2> name_fields = {"name", "id"};

std::string random_name() {
    return "rest-consumer-" + uuid::random().to_string();
}

/// Waits for the stored instances to be back (after a restart); the 50003 answer if not.
boost::asio::awaitable<std::optional<http_response>> wait_ready(const consumer_routes_ctx* c) {
    // Awaited into a named value: g++ 12 lays out some frames with a co_await in an if
    // condition wrongly (the frame is resumed 8 bytes off).
    const auto deadline = clock::now() + std::chrono::seconds(10);
    const bool ready = co_await c->registry->ready(deadline);
    if (!ready) {
        co_return v2_error(code::kafka_retriable_error,
                           "Retriable Kafka error: consumer instances are being restored");
    }
    co_return std::nullopt;
}

boost::asio::awaitable<handler_result> create_instance(const consumer_routes_ctx* c,
                                                       http_request_context ctx) {
    if (auto bad = check_content_type(ctx.req)) {
        co_return std::move(*bad);
    }
    json::document doc;
    if (auto bad = parse_body(ctx.req, doc, v2_json, true)) {
        co_return std::move(*bad);
    }
    if (!doc.IsObject()) {
        co_return v2_error(code::bad_request, "The request body must be a JSON object");
    }
    instance_config config;
    std::string name;
    // A named array: g++ 12 mishandles an initializer_list temporary in a coroutine's range-for.
    for (const char* field : name_fields) {
        if (const auto* v = json::member(doc, field); v && !v->IsNull()) {
            if (!v->IsString() || v->GetStringLength() == 0) {
                co_return invalid_config(std::string(field) + " must be a non-empty string");
            }
            name = std::string(json::as_view(*v));  // compat: "id" overrides "name"
        }
    }
    if (name.empty()) {
        name = random_name();
    }
    if (name.find('/') != std::string::npos || name.size() > 255) {
        co_return invalid_config("the name must be at most 255 characters and contain no '/'");
    }
    if (const auto* v = json::member(doc, "format"); v && !v->IsNull()) {
        const std::string f = v->IsString() ? std::string(json::as_view(*v)) : "";
        if (f == "binary") {
            config.format = media::binary;
        } else if (f == "json") {
            config.format = media::json;
        } else if (f == "avro" || f == "jsonschema" || f == "protobuf") {
            co_return invalid_config("format " + f +
                                     " needs a schema registry, which sluice does not have");
        } else {
            co_return invalid_config("Invalid format type.");
        }
    }
    if (const auto* v = json::member(doc, "auto.offset.reset"); v && !v->IsNull()) {
        const std::string r = v->IsString() ? std::string(json::as_view(*v)) : "";
        if (r == "earliest" || r == "smallest") {
            config.auto_offset_reset = offset_reset::earliest;
        } else if (r == "latest" || r == "largest") {
            config.auto_offset_reset = offset_reset::latest;
        } else if (r == "none") {
            config.auto_offset_reset = offset_reset::none;
        } else {
            co_return invalid_config(
                "auto.offset.reset must be one of earliest, latest, none");
        }
    }
    if (const auto* v = json::member(doc, "auto.commit.enable"); v && !v->IsNull()) {
        auto b = bool_setting(*v);
        if (!b) {
            co_return invalid_config("auto.commit.enable must be true or false");
        }
        config.auto_commit = *b;
    }
    if (const auto* v = json::member(doc, "fetch.min.bytes"); v && !v->IsNull()) {
        auto n = int_setting(*v);
        if (!n || *n < -1 || *n > 10000000) {
            co_return invalid_config("fetch.min.bytes must be between -1 and 10000000");
        }
        if (*n > 0) {
            config.fetch_min_bytes = static_cast<std::int32_t>(*n);
        }
    }
    if (const auto* v = json::member(doc, "consumer.request.timeout.ms"); v && !v->IsNull()) {
        auto n = int_setting(*v);
        if (!n || *n < 0 || *n > 2147483647) {
            co_return invalid_config("consumer.request.timeout.ms must be a number of ms");
        }
        config.request_timeout = std::chrono::milliseconds(*n);
    }
    auto bad = co_await wait_ready(c);
    if (bad) {
        co_return std::move(*bad);
    }
    const std::string group(*ctx.params.get("group"));
    auto made = co_await c->registry->create(sluice::group_id(group), name, config);
    if (auto* e = std::get_if<error>(&made)) {
        co_return v2_error(e->code, e->message);
    }
    json::writer w;
    w.start_object();
    w.field("instance_id", name);
    w.field("base_uri", base_url(ctx, c->rc->settings) + "/consumers/" +
                            std::string(ctx.path.substr(std::string_view("/consumers/").size())) +
                            "/instances/" + url_segment(name));
    w.end_object();
    co_return v2_ok(w.str());
}

/// The instance of the path, or the 40403 answer.
boost::asio::awaitable<std::variant<std::shared_ptr<consumer_instance>, http_response>>
instance_of(const consumer_routes_ctx* c, const http_request_context& ctx) {
    auto bad = co_await wait_ready(c);
    if (bad) {
        co_return std::move(*bad);
    }
    auto inst = co_await c->registry->find(std::string(*ctx.params.get("group")),
                                           std::string(*ctx.params.get("instance")));
    if (!inst) {
        co_return v2_error(code::consumer_instance_not_found,
                           std::string(instance_not_found_message));
    }
    co_return inst;
}

#define SLUICE_INSTANCE_OR_RETURN(var)                                   \
    auto found_##var = co_await instance_of(c, ctx);                     \
    if (auto* bad = std::get_if<http_response>(&found_##var)) {          \
        co_return std::move(*bad);                                       \
    }                                                                    \
    auto var = std::get<std::shared_ptr<consumer_instance>>(found_##var)

boost::asio::awaitable<handler_result> delete_instance(const consumer_routes_ctx* c,
                                                       http_request_context ctx) {
    auto bad = co_await wait_ready(c);
    if (bad) {
        co_return std::move(*bad);
    }
    const bool removed = co_await c->registry->remove(
        sluice::group_id(std::string(*ctx.params.get("group"))),
        std::string(*ctx.params.get("instance")));
    if (!removed) {
        co_return v2_error(code::consumer_instance_not_found,
                           std::string(instance_not_found_message));
    }
    co_return no_content();
}

boost::asio::awaitable<handler_result> subscribe(const consumer_routes_ctx* c, http_request_context ctx) {
    if (auto bad = check_content_type(ctx.req)) {
        co_return std::move(*bad);
    }
    json::document doc;
    if (auto bad = parse_body(ctx.req, doc, v2_json)) {
        co_return std::move(*bad);
    }
    const json::value* topics = json::member(doc, "topics");
    const json::value* pattern = json::member(doc, "topic_pattern");
    const bool has_topics = topics && !topics->IsNull();
    const bool has_pattern = pattern && !pattern->IsNull();
    if (has_topics == has_pattern) {
        co_return v2_error(code::invalid_payload,
                           "Payload error. Give either topics or topic_pattern");
    }
    std::vector<topic_name> names;
    if (has_topics) {
        if (!topics->IsArray() || topics->Empty()) {
            co_return v2_error(code::invalid_payload,
                               "Payload error. topics must be a non-empty array of names");
        }
        for (const auto& t : topics->GetArray()) {
            if (!t.IsString() || t.GetStringLength() == 0) {
                co_return v2_error(code::invalid_payload,
                                   "Payload error. topics must be a non-empty array of names");
            }
            names.emplace_back(std::string(json::as_view(t)));
        }
    } else if (!pattern->IsString()) {
        co_return v2_error(code::invalid_payload, "Payload error. topic_pattern must be a string");
    }
    if (auto denied = check_topics(c, ctx, auth::acl_operation::describe, names,
                                   [](const topic_name& t) -> const std::string& {
                                       return t.value;
                                   })) {
        co_return std::move(*denied);
    }
    SLUICE_INSTANCE_OR_RETURN(inst);
    auto err = has_topics ? inst->subscribe(std::move(names))
                          : inst->subscribe_pattern(std::string(json::as_view(*pattern)),
                                                    ctx.principal, authorizer_host(ctx.peer));
    if (err) {
        co_return v2_error(err->code, err->message);
    }
    co_await inst->save();
    co_return no_content();
}

boost::asio::awaitable<handler_result> get_subscription(const consumer_routes_ctx* c,
                                                        http_request_context ctx) {
    SLUICE_INSTANCE_OR_RETURN(inst);
    json::writer w;
    w.start_object();
    w.key("topics");
    w.start_array();
    for (const auto& t : inst->subscription()) {
        w.string(t);
    }
    w.end_array();
    w.end_object();
    co_return v2_ok(w.str());
}

boost::asio::awaitable<handler_result> unsubscribe(const consumer_routes_ctx* c,
                                                   http_request_context ctx) {
    SLUICE_INSTANCE_OR_RETURN(inst);
    inst->unsubscribe();
    co_await inst->save();
    co_return no_content();
}

boost::asio::awaitable<handler_result> assign(const consumer_routes_ctx* c, http_request_context ctx) {
    auto parts = read_partitions_body(ctx.req);
    if (auto* bad = std::get_if<http_response>(&parts)) {
        co_return std::move(*bad);
    }
    if (auto denied = check_topics(c, ctx, auth::acl_operation::describe, std::get<0>(parts),
                                   [](const topic_partition& tp) -> const std::string& {
                                       return tp.topic.value;
                                   })) {
        co_return std::move(*denied);
    }
    SLUICE_INSTANCE_OR_RETURN(inst);
    if (auto err = inst->assign(std::move(std::get<0>(parts)))) {
        co_return v2_error(err->code, err->message);
    }
    co_await inst->save();
    co_return no_content();
}

void write_partitions(json::writer& w, const std::vector<topic_partition>& parts) {
    w.start_array();
    for (const auto& tp : parts) {
        w.start_object();
        w.field("topic", tp.topic.value);
        w.field("partition", tp.partition.value);
        w.end_object();
    }
    w.end_array();
}

boost::asio::awaitable<handler_result> get_assignment(const consumer_routes_ctx* c,
                                                      http_request_context ctx) {
    SLUICE_INSTANCE_OR_RETURN(inst);
    json::writer w;
    w.start_object();
    w.key("partitions");
    write_partitions(w, inst->assignment());
    w.end_object();
    co_return v2_ok(w.str());
}

boost::asio::awaitable<handler_result> seek(const consumer_routes_ctx* c, http_request_context ctx) {
    if (auto bad = check_content_type(ctx.req)) {
        co_return std::move(*bad);
    }
    json::document doc;
    if (auto bad = parse_body(ctx.req, doc, v2_json)) {
        co_return std::move(*bad);
    }
    std::vector<std::pair<topic_partition, std::int64_t>> offsets;
    std::vector<std::pair<topic_partition, std::int64_t>> times;
    auto read_list = [&](const char* field, bool timestamps) -> std::optional<http_response> {
        const json::value* list = json::member(doc, field);
        if (!list || list->IsNull()) {
            return std::nullopt;
        }
        if (!list->IsArray()) {
            return v2_error(code::invalid_payload,
                            "Payload error. " + std::string(field) + " must be an array");
        }
        for (const auto& v : list->GetArray()) {
            auto topic = json::get_string(v, "topic");
            auto partition = json::get_int(v, "partition");
            std::optional<std::int64_t> at;
            if (timestamps) {
                if (auto ts = json::get_string(v, "timestamp")) {
                    at = parse_timestamp(*ts);
                } else {
                    at = json::get_int(v, "timestamp");
                }
            } else {
                at = json::get_int(v, "offset");
            }
            if (!topic || !partition || *partition < 0 || !at || *at < 0) {
                return v2_error(code::invalid_payload,
                                "Payload error. Every entry needs topic, partition and " +
                                    std::string(timestamps ? "timestamp" : "offset"));
            }
            topic_partition tp{topic_name(std::string(*topic)),
                               partition_id(static_cast<std::int32_t>(*partition))};
            (timestamps ? times : offsets).emplace_back(tp, *at);
        }
        return std::nullopt;
    };
    if (auto bad = read_list("offsets", false)) {
        co_return std::move(*bad);
    }
    if (auto bad = read_list("timestamps", true)) {
        co_return std::move(*bad);
    }
    SLUICE_INSTANCE_OR_RETURN(inst);
    if (auto err = inst->seek(offsets)) {
        co_return v2_error(err->code, err->message);
    }
    if (!times.empty()) {
        auto err = co_await inst->seek_to_time(std::move(times));
        if (err) {
            co_return v2_error(err->code, err->message);
        }
    }
    co_await inst->save();
    co_return no_content();
}

boost::asio::awaitable<handler_result> seek_to(const consumer_routes_ctx* c, bool beginning,
                                               http_request_context ctx) {
    auto parts = read_partitions_body(ctx.req);
    if (auto* bad = std::get_if<http_response>(&parts)) {
        co_return std::move(*bad);
    }
    SLUICE_INSTANCE_OR_RETURN(inst);
    auto err = co_await inst->seek_to(
        std::move(std::get<0>(parts)),
        beginning ? consumer_instance::seek_kind::beginning : consumer_instance::seek_kind::end);
    if (err) {
        co_return v2_error(err->code, err->message);
    }
    co_await inst->save();
    co_return no_content();
}

std::int64_t query_int(const http_request_context& ctx, std::string_view name,
                       std::int64_t fallback) {
    auto v = ctx.query.get(name);
    if (!v) {
        return fallback;
    }
    std::int64_t out = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), out);
    return ec == std::errc() && p == v->data() + v->size() ? out : fallback;
}

boost::asio::awaitable<handler_result> get_records(const consumer_routes_ctx* c,
                                                    http_request_context ctx) {
    SLUICE_INSTANCE_OR_RETURN(inst);
    const media own = inst->config().format;
    const auto accepted = accepted_records_media(header(ctx.req, "Accept"));
    if (accepted && *accepted != own) {
        co_return v2_error(code::consumer_format_mismatch, std::string(format_mismatch_message));
    }
    if (c->rc->chain.authorizing()) {
        auto denied = check_topics(c, ctx, auth::acl_operation::read, inst->subscription(),
                                   [](const std::string& t) -> const std::string& { return t; });
        if (!denied) {
            denied = check_topics(c, ctx, auth::acl_operation::read, inst->assignment(),
                                  [](const topic_partition& tp) -> const std::string& {
                                      return tp.topic.value;
                                  });
        }
        if (denied) {
            co_return std::move(*denied);
        }
    }
    const auto timeout = std::chrono::milliseconds(query_int(ctx, "timeout", -1));
    const std::int64_t max_bytes = query_int(ctx, "max_bytes", -1);
    auto res = co_await inst->read(timeout, max_bytes);
    if (auto* e = std::get_if<error>(&res)) {
        co_return v2_error(e->code, e->message);
    }
    co_return json_response(200, own == media::json ? v2_json_embedded : v2_binary,
                            std::move(std::get<std::string>(res)));
}

boost::asio::awaitable<handler_result> commit(const consumer_routes_ctx* c, http_request_context ctx) {
    if (auto bad = check_content_type(ctx.req)) {
        co_return std::move(*bad);
    }
    json::document doc;
    if (auto bad = parse_body(ctx.req, doc, v2_json, true)) {
        co_return std::move(*bad);
    }
    std::optional<std::vector<consumer_instance::commit_entry>> entries;
    if (const json::value* list = json::member(doc, "offsets"); list && !list->IsNull()) {
        if (!list->IsArray()) {
            co_return v2_error(code::invalid_payload, "Payload error. offsets must be an array");
        }
        entries.emplace();
        for (const auto& v : list->GetArray()) {
            auto topic = json::get_string(v, "topic");
            auto partition = json::get_int(v, "partition");
            auto off = json::get_int(v, "offset");
            if (!topic || !partition || *partition < 0 || !off || *off < 0) {
                co_return v2_error(code::invalid_payload,
                                   "Payload error. Every offset needs topic, partition and offset");
            }
            consumer_instance::commit_entry e;
            e.tp = {topic_name(std::string(*topic)),
                    partition_id(static_cast<std::int32_t>(*partition))};
            e.offset = *off;
            if (auto m = json::get_string(v, "metadata")) {
                e.metadata = std::string(*m);
            }
            entries->push_back(std::move(e));
        }
    }
    SLUICE_INSTANCE_OR_RETURN(inst);
    if (entries && c->rc->chain.authorizing()) {
        std::vector<std::string> topics;
        topics.reserve(entries->size());
        for (const auto& e : *entries) {
            topics.push_back(e.tp.topic.value);
        }
        if (auto denied =
                refuse_checks(*c->rc, ctx, consumer_offsets_checks(verb::post, topics), true)) {
            co_return std::move(*denied);
        }
    }
    auto res = co_await inst->commit(std::move(entries));
    if (auto* e = std::get_if<error>(&res)) {
        co_return v2_error(e->code, e->message);
    }
    co_return v2_ok(std::move(std::get<std::string>(res)));
}

boost::asio::awaitable<handler_result> committed(const consumer_routes_ctx* c,
                                                 http_request_context ctx) {
    json::document doc;
    if (auto bad = parse_body(ctx.req, doc, v2_json, true)) {
        co_return std::move(*bad);
    }
    if (!json::member(doc, "partitions")) {
        // compat: ConsumersResource.committedOffsets without a body.
        co_return v2_error(code::partition_not_found, std::string(partition_not_found_message));
    }
    auto parts = read_partitions(doc, "partitions");
    if (auto* bad = std::get_if<http_response>(&parts)) {
        co_return std::move(*bad);
    }
    SLUICE_INSTANCE_OR_RETURN(inst);
    if (c->rc->chain.authorizing()) {
        std::vector<std::string> topics;
        for (const auto& tp : std::get<0>(parts)) {
            topics.push_back(tp.topic.value);
        }
        if (auto denied =
                refuse_checks(*c->rc, ctx, consumer_offsets_checks(verb::get, topics), true)) {
            co_return std::move(*denied);
        }
    }
    auto res = co_await inst->committed(std::move(std::get<0>(parts)));
    if (auto* e = std::get_if<error>(&res)) {
        co_return v2_error(e->code, e->message);
    }
    co_return v2_ok(std::move(std::get<std::string>(res)));
}

#undef SLUICE_INSTANCE_OR_RETURN

}  // namespace

void add_v2_consumer_routes(router& routes, rest_context& ctx, consumer_registry& consumers) {
    auto shared = std::make_shared<const consumer_routes_ctx>(consumer_routes_ctx{&ctx, &consumers});
    auto bind = [shared](auto fn) {
        return [shared, fn](http_request_context r) { return fn(shared.get(), std::move(r)); };
    };
    const std::string base = "/consumers/{group}/instances/{instance}";
    routes.add(verb::post, "/consumers/{group}", bind(create_instance));
    routes.add(verb::delete_, base, bind(delete_instance));
    routes.add(verb::post, base + "/subscription", bind(subscribe));
    routes.add(verb::get, base + "/subscription", bind(get_subscription));
    routes.add(verb::delete_, base + "/subscription", bind(unsubscribe));
    routes.add(verb::post, base + "/assignments", bind(assign));
    routes.add(verb::get, base + "/assignments", bind(get_assignment));
    routes.add(verb::post, base + "/positions", bind(seek));
    routes.add(verb::post, base + "/positions/beginning",
               [shared](http_request_context r) { return seek_to(shared.get(), true, std::move(r)); });
    routes.add(verb::post, base + "/positions/end",
               [shared](http_request_context r) { return seek_to(shared.get(), false, std::move(r)); });
    routes.add(verb::get, base + "/records", bind(get_records));
    routes.add(verb::post, base + "/offsets", bind(commit));
    routes.add(verb::get, base + "/offsets", bind(committed));
}

}  // namespace sluice::gateway::rest
