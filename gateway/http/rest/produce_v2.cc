// REST Proxy v2 produce: POST /topics/{topic} and POST /topics/{topic}/partitions/{partition}.
//
// Body: {"records":[{"key":..,"value":..,"partition":n?,"headers":[..]?,"timestamp":..?}],
// "key_schema"?, "value_schema"?, ...}; keys and values are base64 strings (binary) or JSON
// values (json), by the Content-Type. Beyond the REST Proxy, a record may carry headers
// ([{"name":"h","value":"<base64>"|null}], as API v3 has them) and a timestamp (milliseconds
// since the epoch, or an RFC 3339 string). The answer lists one {"partition","offset",
// "error_code","error"} per record, in order. A missing topic is created when
// auto.create.topics.enable is on (CREATE on the cluster or the topic needed), else 40401.
#include <algorithm>
#include <charconv>
#include <string_view>

#include "gateway/http/rest/record_json.h"
#include "gateway/http/rest/rest_routes.h"

namespace sluice::gateway::rest {
namespace {

using boost::beast::http::verb;

boost::asio::awaitable<handler_result> produce_v2(rest_context* rc, bool to_partition,
                                                  http_request_context ctx) {
    const media format = content_media(header(ctx.req, "Content-Type"));
    if (format == media::unsupported) {
        co_return v2_error(code::unsupported_media_type,
                           std::string(unsupported_media_type_message));
    }
    json::document doc;  // points into ctx.req's body, which outlives it
    if (auto bad = parse_body_in_place(ctx.req, doc, v2_json)) {
        co_return std::move(*bad);
    }
    if (!doc.IsObject()) {
        co_return v2_error(code::bad_request, "The request body must be a JSON object");
    }
    const json::value* recs = json::member(doc, "records");
    if (!recs || !recs->IsArray() || recs->Empty()) {
        co_return v2_error(code::invalid_payload,
                           "Payload error. records must be a non-empty array");
    }
    if (format == media::schema) {
        // compat: the REST Proxy checks that schemas come with the data before using them.
        bool keys = false, values = false;
        for (const auto& r : recs->GetArray()) {
            const auto* k = json::member(r, "key");
            const auto* v = json::member(r, "value");
            keys = keys || (k && !k->IsNull());
            values = values || (v && !v->IsNull());
        }
        if (keys && !json::member(doc, "key_schema") && !json::member(doc, "key_schema_id")) {
            co_return v2_error(code::key_schema_missing,
                               "Request includes keys but does not include key schema");
        }
        if (values && !json::member(doc, "value_schema") &&
            !json::member(doc, "value_schema_id")) {
            co_return v2_error(code::value_schema_missing,
                               "Request includes values but does not include value schema");
        }
        co_return v2_error(code::invalid_schema,
                           "Invalid schema: schema formats (avro, jsonschema, protobuf) need a "
                           "schema registry, which sluice does not have");
    }
    const media embedded = format == media::json ? media::json : media::binary;

    std::optional<std::int32_t> url_partition;
    if (to_partition) {
        url_partition = parse_partition(*ctx.params.get("partition"));
        if (!url_partition) {
            co_return v2_error(code::partition_not_found, std::string(partition_not_found_message));
        }
    }

    std::vector<outgoing_record> out;
    out.reserve(recs->Size());
    for (const auto& r : recs->GetArray()) {
        auto rec = read_v2_record(r, embedded == media::json, url_partition);
        if (auto* e = std::get_if<record_error>(&rec)) {
            co_return v2_error(e->c, e->message);
        }
        out.push_back(std::move(std::get<outgoing_record>(rec)));
    }

    const topic_name topic(std::string(*ctx.params.get("topic")));
    const producer_identity who = producer_of(*rc, ctx);
    produce_outcome res = co_await rc->producer.produce(topic, std::move(out), &who);
    if (res.refusal == produce_refusal::unknown_topic) {
        co_return v2_error(code::topic_not_found, std::string(topic_not_found_message));
    }
    if (res.refusal == produce_refusal::create_denied) {
        co_return report_denied(ctx, *res.denied, true);
    }
    if (res.refusal == produce_refusal::create_failed) {
        const error e = from_backend(res.create_error, subject::topic);
        co_return v2_error(e.code, e.message);
    }
    if (res.refusal == produce_refusal::unknown_partition) {
        co_return v2_error(code::partition_not_found, std::string(partition_not_found_message));
    }

    // Every record refused for want of storage (a full disk): 507, so that clients that look
    // only at the status retry; the body still has each record's result.
    const bool no_storage =
        !res.records.empty() &&
        std::all_of(res.records.begin(), res.records.end(), [](const auto& r) {
            return r.error && produce_error_code(r.error) == code::insufficient_storage;
        });
    json::writer w;
    w.start_object();
    w.key("offsets");
    w.start_array();
    for (const auto& r : res.records) {
        if (r.error) {
            w.start_object();
            w.null_field("partition");
            w.null_field("offset");
            w.key("error_code");
            w.int64(static_cast<std::int64_t>(produce_error_code(r.error)));
            w.field("error", r.error.message());
            w.end_object();
        } else {
            // The common case, written as one piece: two numbers in a fixed shape (the four
            // keys through the writer were most of this answer's cost).
            char entry[96];
            char* at = entry;
            auto put = [&](std::string_view text) {
                at = std::copy(text.begin(), text.end(), at);
            };
            put("{\"partition\":");
            at = std::to_chars(at, entry + sizeof entry, r.partition).ptr;
            put(",\"offset\":");
            at = std::to_chars(at, entry + sizeof entry, r.offset).ptr;
            put(",\"error_code\":null,\"error\":null}");
            w.raw(std::string_view(entry, static_cast<std::size_t>(at - entry)));
        }
    }
    w.end_array();
    w.null_field("key_schema_id");
    w.null_field("value_schema_id");
    w.end_object();
    co_return json_response(no_storage ? 507 : 200, v2_json, w.str());
}

}  // namespace

void add_v2_produce_routes(router& routes, rest_context& ctx) {
    routes.add(verb::post, "/topics/{topic}", [rc = &ctx](http_request_context c) {
        return produce_v2(rc, false, std::move(c));
    });
    routes.add(verb::post, "/topics/{topic}/partitions/{partition}",
               [rc = &ctx](http_request_context c) { return produce_v2(rc, true, std::move(c)); });
}

}  // namespace sluice::gateway::rest
