#include "gateway/http/http_settings.h"

#include <algorithm>

#include "gateway/core/settings.h"

namespace sluice::gateway {
namespace {

constexpr std::int64_t int_max = 2147483647;
constexpr std::int64_t a_year_ms = 24LL * 3600 * 1000 * 365;
constexpr auto integer = setting_type::integer;
constexpr auto ms = setting_unit::milliseconds;
constexpr auto bytes = setting_unit::bytes;

namespace key {
constexpr setting authentication{
    .name = "http.authentication", .type = setting_type::list, .default_value = "none",
    .doc = "sluice's: `none`, `basic`, `bearer` or `basic,bearer`: what every HTTP route but "
           "`/healthz` and `/readyz` requires ([security.md](security.md))"};
constexpr setting max_body{
    .name = "http.request.max.bytes", .type = integer, .default_value = "67108864",
    .doc = "sluice's: the largest request body (413 above it); also the largest record of a v3 "
           "streamed produce",
    .unit = bytes, .min = 1024, .max = std::int64_t{1} << 40};
constexpr setting body_budget{
    .name = "http.request.body.budget.bytes", .type = integer, .default_value = "268435456",
    .doc = "sluice's: request bodies read and not yet answered across the HTTP and SQS "
           "listeners (see Listeners above)",
    .unit = bytes, .min = 1024, .max = std::int64_t{1} << 40};
constexpr setting body_budget_wait{
    .name = "http.request.body.budget.wait.ms", .type = integer, .default_value = "10000",
    .doc = "sluice's: how long a body waits for room in that budget before 503", .unit = ms,
    .min = 0, .max = a_year_ms};
constexpr setting advertised_url{
    .name = "http.advertised.url",
    .doc = "sluice's: the base of `base_uri` and of v3 links behind a load balancer or proxy "
           "(`https://lb.example.com/kafka`). Without it, the request's `X-Forwarded-Proto` and "
           "`X-Forwarded-Host`, else its `Host` header (the scheme: `https` on an HTTPS "
           "listener)"};
constexpr setting allowed_origins{
    .name = "http.allowed.origins", .type = setting_type::list,
    .doc = "sluice's: `*` or a comma-separated list of origins (`https://app.example.com`) whose "
           "pages may use the HTTP and SQS fronts. A request with another browser `Origin` is "
           "refused with 403 (`/ws` before the upgrade, SSE before the stream); requests without "
           "`Origin` are not a page's and pass. Listed origins also get CORS answers "
           "([security.md](security.md#browsers-allowed-origins))",
    .shown_default = "none (each front's own origin only)"};
constexpr setting allow_origin{
    .name = "access.control.allow.origin", .type = setting_type::list,
    .doc = "the REST Proxy's name for the same list: its origins are added to "
           "`http.allowed.origins` (allowed and given CORS answers); one list, so CORS and the "
           "origin check never disagree"};
constexpr setting allow_methods{
    .name = "access.control.allow.methods", .default_value = "GET,POST,PUT,DELETE,HEAD,OPTIONS",
    .doc = "answered to CORS preflight requests of listed origins"};
constexpr setting allow_headers{
    .name = "access.control.allow.headers",
    .default_value = "origin,content-type,accept,authorization,last-event-id",
    .doc = "answered to CORS preflight requests of listed origins"};
constexpr setting api_v2{.name = "api.v2.enable", .type = setting_type::boolean,
                         .default_value = "true",
                         .doc = "serve API v2 (produce, metadata, consumers)"};
constexpr setting api_v3{.name = "api.v3.enable", .type = setting_type::boolean,
                         .default_value = "true", .doc = "serve API v3"};
constexpr setting produce_batch_entries{
    .name = "api.v3.produce.batch.maximum.entries", .type = integer, .default_value = "10",
    .doc = "the most entries a v3 POST .../records:batch may carry (more: 422, error code 42208)",
    .min = 1, .max = 50};
constexpr setting producer_acks{
    .name = "producer.acks", .default_value = "all",
    .doc = "when a REST, WebSocket or v3 produce is answered: `all` (durable, as Kafka's "
           "producers default), `1` (appended), `0`"};
constexpr setting instance_timeout{
    .name = "consumer.instance.timeout.ms", .type = integer, .default_value = "300000",
    .doc = "a consumer instance not used for this long is deleted (its member leaves the group)",
    .unit = ms, .min = 1, .max = a_year_ms};
constexpr setting request_timeout{
    .name = "consumer.request.timeout.ms", .type = integer, .default_value = "1000",
    .doc = "the longest GET records waits for records (and the default when `timeout` is not "
           "given); an instance may set its own",
    .unit = ms, .min = 1, .max = a_year_ms};
constexpr setting request_max_bytes{
    .name = "consumer.request.max.bytes", .type = integer, .default_value = "67108864",
    .doc = "the most a GET records answers (`max_bytes` may lower it)", .unit = bytes, .min = 1,
    .max = std::int64_t{1} << 40};
constexpr setting fetch_min_bytes{
    .name = "fetch.min.bytes", .type = integer, .default_value = "-1",
    .doc = "bytes GET records waits for before answering within its timeout; `-1`: answer as "
           "soon as there is a record",
    .unit = bytes, .min = -1, .max = 10000000};
constexpr setting session_timeout{
    .name = "consumer.session.timeout.ms", .type = integer, .default_value = "30000",
    .doc = "sluice's: the session timeout of the group members sluice runs for REST instances, "
           "WebSocket and SSE subscriptions (they heartbeat every third of it, at most every 3 s)",
    .unit = ms, .min = 1000, .max = int_max};
constexpr setting ws_max_message{
    .name = "websocket.max.message.bytes", .type = integer, .default_value = "1048576",
    .doc = "a larger client message closes the connection (close code 1009)", .unit = bytes,
    .min = 1024, .max = std::int64_t{1} << 30};
constexpr setting ws_queue{
    .name = "websocket.queue.max.bytes", .type = integer, .default_value = "1048576",
    .doc = "outgoing frames queued per connection; subscriptions stop reading while it is full",
    .unit = bytes, .min = 1024, .max = std::int64_t{1} << 32};
constexpr setting ws_write_timeout{
    .name = "websocket.write.timeout.ms", .type = integer, .default_value = "30000",
    .doc = "a client that does not drain one frame in this long is dropped", .unit = ms,
    .min = 1, .max = a_year_ms};
constexpr setting ws_idle_timeout{
    .name = "websocket.idle.timeout.ms", .type = integer, .default_value = "60000",
    .doc = "a client silent this long (pongs included) is dropped; it is pinged after half of it",
    .unit = ms, .min = 100, .max = a_year_ms};
constexpr setting sse_queue{
    .name = "sse.queue.max.bytes", .type = integer, .default_value = "1048576",
    .doc = "events read ahead of the socket per stream", .unit = bytes, .min = 1024,
    .max = std::int64_t{1} << 32};
constexpr setting sse_write_timeout{
    .name = "sse.write.timeout.ms", .type = integer, .default_value = "30000",
    .doc = "a client that does not drain one chunk in this long is dropped", .unit = ms,
    .min = 1, .max = a_year_ms};
constexpr setting sse_keepalive{
    .name = "sse.keepalive.interval.ms", .type = integer, .default_value = "15000",
    .doc = "a comment line is sent when a stream has been idle this long", .unit = ms, .min = 1,
    .max = a_year_ms};
constexpr setting sse_retry{
    .name = "sse.retry.ms", .type = integer, .default_value = "1000",
    .doc = "the reconnect delay a stream gives its client (`retry:`)", .unit = ms, .min = 0,
    .max = a_year_ms};
}  // namespace key

constexpr setting http_settings_table[] = {
    key::authentication,   key::max_body,        key::body_budget,       key::body_budget_wait,
    key::advertised_url,   key::allowed_origins, key::allow_origin,      key::allow_methods,
    key::allow_headers,    key::api_v2,          key::api_v3,            key::producer_acks,
    key::produce_batch_entries,
    key::instance_timeout, key::request_timeout, key::request_max_bytes, key::fetch_min_bytes,
    key::session_timeout,  key::ws_max_message,  key::ws_queue,          key::ws_write_timeout,
    key::ws_idle_timeout,  key::sse_queue,       key::sse_write_timeout, key::sse_keepalive,
    key::sse_retry,
};

}  // namespace

const setting_table& http_setting_table() {
    static const setting_table table{
        .module = "http", .title = "HTTP front", .settings = http_settings_table};
    return table;
}

std::vector<std::string> read_allowed_origins(const config& cfg) {
    const config_values v(cfg);
    std::vector<std::string> out;
    // compat: access.control.allow.origin is the REST Proxy's CORS list; an origin it names
    // is one whose pages are meant to call the API, so it is allowed by the same rule.
    for (const setting* s : {&key::allowed_origins, &key::allow_origin}) {
        for (const auto& item : v.get_list(*s)) {
            auto origin = normalize_origin(item);
            if (!origin) {
                v.fail(*s, "'" + item +
                               "' is not an origin (scheme://host[:port], such as "
                               "https://app.example.com, or *)");
            }
            if (std::find(out.begin(), out.end(), *origin) == out.end()) {
                out.push_back(std::move(*origin));
            }
        }
    }
    return out;
}

http_settings read_http_settings(const config& cfg) {
    const config_values v(cfg);
    http_settings s;
    s.limits.max_body_bytes = static_cast<std::uint64_t>(v.get_int(key::max_body));

    s.cors.allow_origins = read_allowed_origins(cfg);
    s.cors.allow_methods = v.get_string(key::allow_methods);
    s.cors.allow_headers = v.get_string(key::allow_headers);

    for (const auto& mode : v.get_list(key::authentication)) {
        if (mode == "basic") {
            s.authentication.basic = true;
        } else if (mode == "bearer") {
            s.authentication.bearer = true;
        } else if (mode != "none") {
            v.fail(key::authentication,
                   "unknown mode '" + mode + "' (none, basic, bearer or basic,bearer)");
        }
    }

    s.advertised_url = v.get_string(key::advertised_url);
    while (!s.advertised_url.empty() && s.advertised_url.back() == '/') {
        s.advertised_url.pop_back();
    }
    if (!s.advertised_url.empty() && s.advertised_url.rfind("http://", 0) != 0 &&
        s.advertised_url.rfind("https://", 0) != 0) {
        v.fail(key::advertised_url, "must start with http:// or https://");
    }
    if (auto own = origin_of_url(s.advertised_url)) {
        s.cors.own_origins.push_back(std::move(*own));
    }
    s.api_v2_enable = v.get_bool(key::api_v2);
    s.api_v3_enable = v.get_bool(key::api_v3);
    s.produce_batch_max_entries =
        static_cast<std::int32_t>(v.get_int(key::produce_batch_entries));

    const std::string acks = v.get_string(key::producer_acks);
    if (acks == "all" || acks == "-1") {
        s.producer_acks = backend::api::acks::all;
    } else if (acks == "1") {
        s.producer_acks = backend::api::acks::leader;
    } else if (acks == "0") {
        s.producer_acks = backend::api::acks::none;
    } else {
        v.fail(key::producer_acks, "must be all, -1, 1 or 0");
    }

    s.consumer_instance_timeout = v.get_ms(key::instance_timeout);
    s.consumer_request_timeout = v.get_ms(key::request_timeout);
    s.consumer_request_max_bytes = v.get_int(key::request_max_bytes);
    s.fetch_min_bytes = static_cast<std::int32_t>(v.get_int(key::fetch_min_bytes));
    s.member_session_timeout_ms = static_cast<std::int32_t>(v.get_int(key::session_timeout));

    auto& st = s.streams;
    st.websocket_max_message_bytes = static_cast<std::size_t>(v.get_int(key::ws_max_message));
    st.websocket_queue_max_bytes = static_cast<std::size_t>(v.get_int(key::ws_queue));
    st.sse_queue_max_bytes = static_cast<std::size_t>(v.get_int(key::sse_queue));
    st.websocket_write_timeout = v.get_ms(key::ws_write_timeout);
    st.sse_write_timeout = v.get_ms(key::sse_write_timeout);
    st.websocket_idle_timeout = v.get_ms(key::ws_idle_timeout);
    st.sse_keepalive_interval = v.get_ms(key::sse_keepalive);
    st.sse_retry = v.get_ms(key::sse_retry);

    s.body_budget_bytes = v.get_int(key::body_budget);
    s.body_budget_wait = v.get_ms(key::body_budget_wait);
    return s;
}

}  // namespace sluice::gateway
