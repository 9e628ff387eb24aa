#include "gateway/kafka/dispatcher.h"

#include <chrono>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "gateway/kafka/logger.h"
#include "gateway/kafka/sasl_exchange.h"
#include "gateway/core/busy_time.h"
#include "gateway/policy/quota_meter.h"
#include "protocol/kafka/api_table.h"
#include "protocol/kafka/header.h"
#include "protocol/kafka/messages/api_versions.h"

namespace sluice::gateway {
namespace asio = boost::asio;
namespace kafka = protocol::kafka;

namespace {

constexpr std::int16_t unsupported_version_code = 35;

/// KIP-511: a too-new ApiVersions request gets a v0 body (error + api list) under a v0 header.
void encode_api_versions_fallback(protocol::writer& w, std::int32_t correlation_id) {
    kafka::api_versions_response resp;
    resp.error_code = kafka::error_code::unsupported_version;
    for (const auto& h : handler_registry()) {
        resp.api_keys.push_back({static_cast<kafka::api_key>(h.api_key), h.min_version,
                                 h.max_version, {}});
    }
    kafka::encode_response_header(w, correlation_id, 0);
    resp.encode(w, 0);
}

}  // namespace

dispatcher::dispatcher(services& svc) : svc_(svc) {
    for (const auto& h : handler_registry()) {
        if (h.api_key >= 0 && h.api_key < static_cast<std::int16_t>(table_.size())) {
            table_[h.api_key] = &h;
            const kafka::api_info* info = kafka::find_api(h.api_key);
            std::string name(info ? info->name : "Unknown");
            auto& m = metrics_[h.api_key];
            m.requests = &svc.metrics.get_counter("sluice_kafka_requests_total",
                                                  "Kafka requests handled, by API", {{"api", name}});
            m.errors = &svc.metrics.get_counter(
                "sluice_kafka_request_failures_total",
                "Kafka requests that closed the connection (malformed or unsupported), by API",
                {{"api", name}});
            m.latency = &svc.metrics.get_histogram(
                "sluice_kafka_request_seconds",
                "Time from reading a Kafka request to having its response ready, by API",
                {{"api", name}});
        }
    }
    malformed_ = &svc.metrics.get_counter(
        "sluice_kafka_malformed_requests_total",
        "Kafka frames with an unknown API key or an undecodable header");
}

asio::awaitable<dispatch_result> dispatcher::raw_sasl_token(
    const connection_info& conn, connection_security& security,
    std::shared_ptr<protocol::byte_buffer> frame) {
    dispatch_result out;
    std::string token(protocol::as_chars(frame->view()));
    auto step = co_await sasl_exchange_step(&svc_, &conn, &security, std::move(token));
    if (step.what == auth::sasl_step::outcome::failure) {
        out.what = dispatch_result::action::close;
        co_return out;
    }
    out.response.i32(static_cast<std::int32_t>(step.reply.size()));
    out.response.raw(protocol::as_bytes(step.reply));
    co_return out;
}

asio::awaitable<dispatch_result> dispatcher::dispatch(const connection_info& conn,
                                                      connection_security& security,
                                                      std::shared_ptr<protocol::byte_buffer> frame) {
    if (security.raw_sasl_tokens && security.sasl) {
        dispatch_result raw = co_await raw_sasl_token(conn, security, std::move(frame));
        co_return raw;
    }
    const auto start = std::chrono::steady_clock::now();
    dispatch_result out;
    protocol::reader r(frame->view(), frame);
    auto header = kafka::decode_request_header(r);
    if (!header) {
        kafka_log().warn("conn {} from {}: undecodable request header ({} bytes): {}; closing",
                         conn.id, conn.peer.address().to_string(), frame->size(),
                         header.error().message());
        malformed_->inc();
        out.what = dispatch_result::action::close;
        co_return out;
    }
    const std::int16_t key = header->api_key;
    const std::int16_t version = header->api_version;
    const handler_entry* h =
        key >= 0 && key < static_cast<std::int16_t>(table_.size()) ? table_[key] : nullptr;
    if (h == nullptr) {
        kafka_log().warn("conn {} client '{}': unknown API key {} (v{}); closing", conn.id,
                         header->client_id.value_or(""), key, version);
        malformed_->inc();
        out.what = dispatch_result::action::close;
        co_return out;
    }
    const auto api = static_cast<kafka::api_key>(key);
    if (!security.authenticated() && api != kafka::api_key::api_versions &&
        api != kafka::api_key::sasl_handshake && api != kafka::api_key::sasl_authenticate) {
        // compat: Kafka's SaslServerAuthenticator closes a connection that sends any other
        // request before its SASL login completed.
        // A login whose session ended (KIP-368) has a principal but is no longer authenticated.
        kafka_log().warn("conn {} from {} client '{}': {} {}; closing", conn.id,
                         conn.peer.address().to_string(), header->client_id.value_or(""),
                         kafka::api_name(api),
                         security.principal.empty()
                             ? std::string("before SASL authentication")
                             : "after the SASL session of " + security.principal + " expired");
        out.what = dispatch_result::action::close;
        co_return out;
    }
    auto& m = metrics_[key];
    m.requests->inc();
    const std::size_t size_at = out.response.reserve_i32();
    if (!h->supports(version)) {
        if (key == static_cast<std::int16_t>(kafka::api_key::api_versions) &&
            version > h->max_version) {
            kafka_log().debug("conn {} client '{}': ApiVersions v{} too new, answering v0 error",
                              conn.id, header->client_id.value_or(""), version);
            encode_api_versions_fallback(out.response, header->correlation_id);
            out.response.patch_i32(size_at, static_cast<std::int32_t>(out.response.size() - 4));
            m.latency->observe(std::chrono::steady_clock::now() - start);
            co_return out;
        }
        kafka_log().warn("conn {} client '{}': {} v{} not supported (we serve v{}-v{}); closing",
                         conn.id, header->client_id.value_or(""), kafka::api_name(
                             static_cast<kafka::api_key>(key)),
                         version, h->min_version, h->max_version);
        m.errors->inc();
        out.what = dispatch_result::action::close;
        co_return out;
    }

    const kafka::api_info* info = kafka::find_api(key);
    kafka::encode_response_header(out.response, header->correlation_id,
                                  info->response_header_version(version));
    auto executor = co_await asio::this_coro::executor;
    request_context ctx(svc_, conn, security, *header, executor);
    bool decoded = false;
    if (svc_.quotas != nullptr &&
        svc_.quotas->applies(auth::quota_kind::request_percentage, ctx.principal(),
                             ctx.client_id())) {
        // request_percentage: the handler runs on a metered executor, which times each stretch
        // it runs on this io thread (not the time it waits).
        auto clock = std::make_shared<busy_clock>();
        ctx.meter_with(clock);
        decoded = co_await asio::co_spawn(metered_executor(executor, clock),
                                          h->invoke(ctx, r, out.response), asio::use_awaitable);
    } else {
        decoded = co_await h->invoke(ctx, r, out.response);
    }
    if (!decoded) {
        kafka_log().warn("conn {} client '{}': malformed {} v{} request ({} bytes): {}; closing",
                         conn.id, header->client_id.value_or(""), info->name, version,
                         frame->size(), r.error().message());
        m.errors->inc();
        out.what = dispatch_result::action::close;
        co_return out;
    }
    if (ctx.response_suppressed()) {
        out.what = dispatch_result::action::no_response;
    } else {
        out.response.patch_i32(size_at, static_cast<std::int32_t>(out.response.size() - 4));
    }
    out.close_after = ctx.close_after();
    out.throttle = ctx.throttled_for();
    out.delay = ctx.delay_response() && out.throttle.count() > 0;
    m.latency->observe(std::chrono::steady_clock::now() - start);
    co_return out;
}

}  // namespace sluice::gateway
