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

void http_quota_facts(http::verb method, std::string_view pattern, request_facts& facts) {
    if (is_produce_route(method, pattern)) {
        facts.byte_quota = auth::quota_kind::producer_byte_rate;
    } else if (is_consumer_read_route(method, pattern)) {
        facts.byte_quota = auth::quota_kind::consumer_byte_rate;
    }
    facts.request_time = !exempt_from_request_time(pattern);
}

void meter_http_request(const policy_chain& chain, http_request_context* ctx,
                        const request_facts& facts, const decision& d) {
    const auto bytes = facts.byte_quota;
    const bool metered = d.meter_request_time;
    if (!chain.metering() || (!metered && !bytes)) {
        return;
    }
    const bool streamed_produce = bytes == auth::quota_kind::producer_byte_rate && ctx->body;
    // What only the handler's end knows: its io-thread time, the bytes of the body (read after
    // the guard: of a buffered body, or as a streamed one arrives for a REST v3 produce), the
    // bytes a REST v2 consumer read answered.
    ctx->meter_busy_time = metered;
    ctx->after = [chain, front = facts.who.front, principal = ctx->principal, bytes, metered,
                  body = streamed_produce ? ctx->body : nullptr](
                     const http_response* res, std::chrono::nanoseconds busy,
                     std::size_t body_bytes) {
        const requester who{.front = front, .principal = principal};
        if (metered) {
            chain.record_request_time(who, busy);
        }
        if (body != nullptr) {
            chain.record(who, auth::quota_kind::producer_byte_rate,
                         static_cast<double>(body->bytes_read()));
        } else if (bytes == auth::quota_kind::producer_byte_rate) {
            chain.record(who, *bytes, static_cast<double>(body_bytes));
        } else if (bytes == auth::quota_kind::consumer_byte_rate && res != nullptr &&
                   res->result_int() == 200) {
            chain.record(who, *bytes, static_cast<double>(res->body().size()));
        }
    };
}

boost::asio::awaitable<void> pace_stream(policy_chain chain, policy_front front,
                                         std::string principal, double bytes) {
    if (!chain.metering() || bytes <= 0) {
        co_return;
    }
    const requester who{.front = front, .principal = principal};
    const auto wait = chain.record(who, auth::quota_kind::consumer_byte_rate, bytes);
    if (wait.count() <= 0) {
        co_return;
    }
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, wait);
    boost::system::error_code ec;
    co_await timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
}

std::chrono::milliseconds ws_produce_throttle(const policy_chain& chain,
                                              std::string_view principal, double bytes) {
    if (!chain.metering()) {
        return std::chrono::milliseconds(0);
    }
    request_facts facts{.who = {.front = policy_front::websocket, .principal = principal},
                        .action = "produce",
                        .byte_quota = auth::quota_kind::producer_byte_rate,
                        .bytes = bytes};
    return chain.decide(facts).delay;
}

}  // namespace sluice::gateway
