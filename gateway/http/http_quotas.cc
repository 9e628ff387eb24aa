#include "gateway/http/http_quotas.h"

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/field.hpp>
#include <fmt/format.h>


namespace sluice::gateway {
namespace http = boost::beast::http;

namespace {

bool is_produce_route(http::verb method, std::string_view pattern) {
    return method == http::verb::post &&
           (pattern == "/topics/{topic}" || pattern == "/topics/{topic}/partitions/{partition}" ||
            pattern == "/v3/clusters/{cluster_id}/topics/{topic_name}/records");
}

// Routes whose io-thread time request_percentage does not count: the streams, whose handler
// runs for as long as the client stays (WebSocket, SSE; paced by their bytes instead), and the
// probes an orchestrator or scraper sends, which a quota on ANONYMOUS must not refuse.
bool exempt_from_request_time(std::string_view pattern) {
    return pattern == "/ws" || pattern.ends_with("/events") || pattern == "/healthz" ||
           pattern == "/readyz" || pattern == "/metrics";
}

bool is_consumer_read_route(http::verb method, std::string_view pattern) {
    return method == http::verb::get && pattern.starts_with("/consumers/") &&
           pattern.ends_with("/records");
}

}  // namespace

http_response quota_exceeded(std::chrono::milliseconds wait, std::string_view quota) {
    const auto seconds = (wait.count() + 999) / 1000;
    auto res = make_response(
        {429, "application/json",
         fmt::format("{{\"error_code\":{},\"message\":{}}}", too_many_requests_code,
                     json_quote(fmt::format("Request rate is over the {} quota; retry in {} ms",
                                            quota, wait.count())))});
    res.set(http::field::retry_after, std::to_string(std::max<std::int64_t>(seconds, 1)));
    return res;
}

std::optional<http_response> check_http_quota(quota_meter* quotas, http_request_context* ctx,
                                              std::string_view pattern) {
    if (quotas == nullptr || !quotas->any()) {
        return std::nullopt;
    }
    const auto method = ctx->req.method();
    std::optional<auth::quota_kind> bytes;
    if (is_produce_route(method, pattern)) {
        bytes = auth::quota_kind::producer_byte_rate;
    } else if (is_consumer_read_route(method, pattern)) {
        bytes = auth::quota_kind::consumer_byte_rate;
    }
    constexpr auto request_time = auth::quota_kind::request_percentage;
    const bool metered = !exempt_from_request_time(pattern) &&
                         quotas->applies(request_time, ctx->principal, "");
    for (const auto kind : {std::optional(request_time), bytes}) {
        if (!kind || (*kind == request_time && !metered)) {
            continue;
        }
        const auto wait = quotas->throttled_now(quota_front::http, *kind, ctx->principal, "");
        if (wait.count() > 0) {
            return quota_exceeded(wait, auth::to_string(*kind));
        }
    }
    const bool streamed_produce = bytes == auth::quota_kind::producer_byte_rate && ctx->body;
    if (!metered && !bytes) {
        return std::nullopt;
    }
    // What only the handler's end knows: its io-thread time, the bytes of the body (read after
    // this guard: of a buffered body, or as a streamed one arrives for a REST v3 produce), the
    // bytes a REST v2 consumer read answered.
    ctx->meter_busy_time = metered;
    ctx->after = [quotas, principal = ctx->principal, bytes, metered,
                  body = streamed_produce ? ctx->body : nullptr](
                     const http_response* res, std::chrono::nanoseconds busy,
                     std::size_t body_bytes) {
        if (metered) {
            quotas->record_request_time(quota_front::http, principal, "", busy);
        }
        if (body != nullptr) {
            quotas->record(quota_front::http, auth::quota_kind::producer_byte_rate, principal, "",
                           static_cast<double>(body->bytes_read()));
        } else if (bytes == auth::quota_kind::producer_byte_rate) {
            quotas->record(quota_front::http, *bytes, principal, "",
                           static_cast<double>(body_bytes));
        } else if (bytes == auth::quota_kind::consumer_byte_rate && res != nullptr &&
                   res->result_int() == 200) {
            quotas->record(quota_front::http, *bytes, principal, "",
                           static_cast<double>(res->body().size()));
        }
    };
    return std::nullopt;
}

boost::asio::awaitable<void> pace_stream(quota_meter* quotas, quota_front front,
                                         std::string principal, double bytes) {
    if (quotas == nullptr || !quotas->any() || bytes <= 0) {
        co_return;
    }
    const auto wait =
        quotas->record(front, auth::quota_kind::consumer_byte_rate, principal, "", bytes);
    if (wait.count() <= 0) {
        co_return;
    }
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, wait);
    boost::system::error_code ec;
    co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
}

std::chrono::milliseconds ws_produce_throttle(quota_meter* quotas, std::string_view principal,
                                              double bytes) {
    if (quotas == nullptr || !quotas->any()) {
        return std::chrono::milliseconds(0);
    }
    const auto wait = quotas->throttled_now(quota_front::websocket,
                                            auth::quota_kind::producer_byte_rate, principal, "");
    if (wait.count() > 0) {
        return wait;
    }
    quotas->record(quota_front::websocket, auth::quota_kind::producer_byte_rate, principal, "",
                   bytes);
    return std::chrono::milliseconds(0);
}

}  // namespace sluice::gateway
