#include "gateway/http/sse_stream.h"

#include <charconv>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include "gateway/http/http_quotas.h"
#include "gateway/http/stream_format.h"
#include "gateway/http/topic_subscription.h"

namespace sluice::gateway {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using clock = std::chrono::steady_clock;

namespace {

struct sse_context {
    rest::rest_context* rc;
    std::function<asio::any_io_executor()> next_executor;
};

std::optional<std::int64_t> to_int(std::string_view s) {
    std::int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
        return std::nullopt;
    }
    return v;
}

std::optional<start_position> parse_from(std::string_view s) {
    start_position out;
    if (s.empty() || s == "latest") {
        return out;
    }
    if (s == "earliest") {
        out.what = start_position::kind::earliest;
        return out;
    }
    if (s.rfind("timestamp:", 0) == 0) {
        auto v = to_int(s.substr(10));
        if (!v || *v < 0) {
            return std::nullopt;
        }
        out.what = start_position::kind::timestamp;
        out.value = *v;
        return out;
    }
    if (s.rfind("offset:", 0) == 0) {
        s.remove_prefix(7);
    }
    auto v = to_int(s);
    if (!v || *v < 0) {
        return std::nullopt;
    }
    out.what = start_position::kind::offset;
    out.value = *v;
    return out;
}

/// "0:42,1:17" -> {0: 42, 1: 17}; nullopt when malformed.
std::optional<std::map<partition_key, std::int64_t>> parse_event_id(std::string_view s,
                                                                   const topic_name& topic) {
    std::map<partition_key, std::int64_t> out;
    while (!s.empty()) {
        const auto comma = s.find(',');
        const auto pair = s.substr(0, comma);
        s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
        const auto colon = pair.find(':');
        if (colon == std::string_view::npos) {
            return std::nullopt;
        }
        auto p = to_int(pair.substr(0, colon));
        auto o = to_int(pair.substr(colon + 1));
        if (!p || !o || *p < 0 || *p > 2147483647 || *o < 0) {
            return std::nullopt;
        }
        out[{topic, partition_id(static_cast<std::int32_t>(*p))}] = *o;
    }
    return out;
}

void append_event_id(std::string& out, const std::map<partition_key, std::int64_t>& at) {
    out += "id: ";
    bool first = true;
    for (const auto& [k, off] : at) {
        if (!first) {
            out.push_back(',');
        }
        first = false;
        out += std::to_string(k.second.value);
        out.push_back(':');
        out += std::to_string(off);
    }
    out.push_back('\n');
}

/// Writes one chunk within the write timeout; false when the client is gone or too slow.
asio::awaitable<bool> write_chunk(http_stream& stream, std::string_view text,
                                  std::chrono::milliseconds timeout) {
    boost::system::error_code ec;
    stream.expires_after(timeout);
    co_await asio::async_write(stream, http::make_chunk(asio::buffer(text.data(), text.size())),
                               asio::redirect_error(asio::use_awaitable, ec));
    stream.expires_never();
    co_return !ec;
}

asio::awaitable<handler_result> serve_events(sse_context c, bool v3, http_request_context ctx) {
    auto* rc = c.rc;
    const auto& st = rc->settings.streams;
    auto answer_error = [&](rest::code code, std::string message) {
        return v3 ? rest::v3_error(code, std::move(message))
                  : rest::v2_error(code, std::move(message));
    };
    if (v3 && *ctx.params.get("cluster_id") != rc->cluster_id) {
        co_return answer_error(rest::code::not_found,
                               "Cluster " + std::string(*ctx.params.get("cluster_id")) +
                                   " cannot be found.");
    }
    const topic_name topic(std::string(*ctx.params.get(v3 ? "topic_name" : "topic")));
    topic_subscription::spec spec;
    spec.topics.push_back(topic);
    auto from = parse_from(ctx.query.get("from").value_or("latest"));
    if (!from) {
        co_return answer_error(rest::code::bad_request,
                               "from must be earliest, latest, an offset or timestamp:<ms>");
    }
    spec.from = *from;
    if (auto g = ctx.query.get("group"); g && !g->empty()) {
        spec.group = sluice::group_id(std::string(*g));
    }
    auto format = parse_stream_format(ctx.query.get("format").value_or("string"));
    if (!format) {
        co_return answer_error(rest::code::bad_request, "format must be string, base64 or json");
    }
    std::optional<std::int64_t> limit;
    if (auto l = ctx.query.get("limit")) {
        limit = to_int(*l);
        if (!limit || *limit < 1) {
            co_return answer_error(rest::code::bad_request, "limit must be a positive integer");
        }
    }
    std::string_view last_id = rest::header(ctx.req, "Last-Event-ID");
    if (last_id.empty()) {
        last_id = ctx.query.get("last_event_id").value_or("");
    }
    if (!last_id.empty()) {
        auto resume = parse_event_id(last_id, topic);
        if (!resume) {
            co_return answer_error(rest::code::bad_request,
                                   "Last-Event-ID must be partition:offset pairs, comma-separated");
        }
        spec.resume = std::move(*resume);
    }
    spec.client = backend::api::client_info{"sluice-sse", ctx.peer.address().to_string()};
    topic_subscription::services svc{*rc->client, rc->settings.member_session_timeout_ms};
    auto consumer_executor = c.next_executor();
    auto opened = co_await topic_subscription::open(svc, std::move(spec), consumer_executor);
    if (auto* e = std::get_if<rest::error>(&opened)) {
        co_return answer_error(e->code, e->message);
    }
    auto sub = std::move(std::get<0>(opened));

    // The stream is ours from here.
    auto& stream = ctx.stream->stream;
    ctx.stream->taken = true;
    http::response<http::empty_body> head{http::status::ok, ctx.req.version()};
    head.set(http::field::server, "sluice");
    head.set(http::field::content_type, "text/event-stream");
    head.set(http::field::cache_control, "no-cache");
    head.set("X-Accel-Buffering", "no");
    if (!ctx.cors_origin.empty()) {
        head.set(http::field::access_control_allow_origin, ctx.cors_origin);
    }
    head.chunked(true);
    head.keep_alive(false);
    http::response_serializer<http::empty_body> sr{head};
    boost::system::error_code ec;
    stream.expires_after(st.sse_write_timeout);
    co_await http::async_write_header(stream, sr, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        sub->close();
        co_return stream_taken{};
    }
    bool alive = co_await write_chunk(stream, "retry: " + std::to_string(st.sse_retry.count()) +
                                                  "\n\n", st.sse_write_timeout);
    std::int64_t sent = 0;
    auto last_write = clock::now();
    std::string chunk;
    json::writer w;
    while (alive && !ctx.finish->requested() && (!limit || sent < *limit)) {
        chunk.clear();
        auto at = sub->positions();
        std::int64_t n = 0;
        auto sink = [&](const topic_name& t, partition_id p, const protocol::kafka::record_view& r) {
            if ((limit && sent + n >= *limit) || (n > 0 && chunk.size() >= st.sse_queue_max_bytes)) {
                return false;
            }
            at[{t, p}] = r.offset + 1;
            append_event_id(chunk, at);
            w.clear();
            write_stream_record(w, t, p, r, *format);
            chunk += "data: ";
            chunk += w.view();
            chunk += "\n\n";
            ++n;
            return true;
        };
        backend::api::poll_limits limits;
        limits.max_wait = std::min(st.fetch_max_wait, st.sse_keepalive_interval);
        limits.max_bytes = static_cast<std::int64_t>(st.sse_queue_max_bytes);
        limits.partition_max_bytes = static_cast<std::int32_t>(
            std::min<std::size_t>(st.sse_queue_max_bytes, 1 << 30));
        auto err = co_await sub->poll(sink, limits);
        if (n > 0) {
            alive = co_await write_chunk(stream, chunk, st.sse_write_timeout);
            // consumer_byte_rate: over the quota, the next read waits (the stream is paced).
            co_await pace_stream(c.rc->chain, policy_front::sse, ctx.principal,
                                 static_cast<double>(chunk.size()));
            sent += n;
            last_write = clock::now();
            if (alive && sub->has_group()) {
                co_await sub->commit();  // what the client was sent is what the group has read
            }
        } else if (clock::now() - last_write >= st.sse_keepalive_interval) {
            alive = co_await write_chunk(stream, ": keepalive\n\n", st.sse_write_timeout);
            last_write = clock::now();
        }
        if (err && alive) {
            w.clear();
            w.start_object();
            w.field("code", static_cast<std::int64_t>(err->code));
            w.field("message", err->message);
            w.end_object();
            co_await write_chunk(stream, "event: error\ndata: " + std::string(w.view()) + "\n\n",
                                 st.sse_write_timeout);
            break;
        }
    }
    sub->close();
    if (alive) {
        stream.expires_after(st.sse_write_timeout);
        co_await asio::async_write(stream, http::make_chunk_last(),
                                   asio::redirect_error(asio::use_awaitable, ec));
        stream.expires_never();
    }
    co_return stream_taken{};
}

}  // namespace

void add_sse_routes(router& routes, rest::rest_context& rc,
                    std::function<asio::any_io_executor()> next_executor) {
    const sse_context c{&rc, std::move(next_executor)};
    routes.add(http::verb::get, "/topics/{topic}/events",
               [c](http_request_context ctx) { return serve_events(c, false, std::move(ctx)); });
    routes.add(http::verb::get, "/v3/clusters/{cluster_id}/topics/{topic_name}/events",
               [c](http_request_context ctx) { return serve_events(c, true, std::move(ctx)); });
}

}  // namespace sluice::gateway
