// One request and its response on an upstream connection of the gateway's own (owned by
// gateway/proxy): the topology's ApiVersions and Metadata, the upstream SASL login. Encoded and
// decoded with protocol/'s codec; the caller bounds the exchange (a deadline closing the
// socket). Header-only templates; no logging.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>

#include "gateway/proxy/response_rewrite.h"
#include "gateway/proxy/upstream_stream.h"
#include "protocol/kafka/api_table.h"
#include "protocol/kafka/header.h"

namespace sluice::gateway::proxy {

/// Upstream responses to the gateway's own requests are small; anything bigger is wrong.
inline constexpr std::int32_t upstream_exchange_max_response_bytes = 64 * 1024 * 1024;

/// The request frame (size prefix included) of `req` at `version`, client id "sluice-proxy".
template <typename Request>
inline protocol::writer upstream_request(const Request& req, std::int16_t version,
                                  std::int32_t correlation_id) {
    protocol::writer w;
    const std::size_t size_at = w.reserve_i32();
    protocol::kafka::request_header h;
    h.api_key = static_cast<std::int16_t>(Request::key);
    h.api_version = version;
    h.correlation_id = correlation_id;
    h.client_id = "sluice-proxy";
    h.header_version = protocol::kafka::request_header_version(h.api_key, version);
    protocol::kafka::encode_request_header(w, h);
    req.encode(w, version);
    w.patch_i32(size_at, static_cast<std::int32_t>(w.size() - 4));
    return w;
}

/// Sends `req` and decodes its response as `Response` at `version`; nullopt with `why` set
/// when the exchange or the decoding fails.
template <typename Response, typename Request>
boost::asio::awaitable<std::optional<Response>> upstream_exchange(upstream_stream& s,
                                                                  const Request& req,
                                                                  std::int16_t version,
                                                                  std::int32_t correlation_id,
                                                                  std::string& why) {
    const protocol::writer w = upstream_request(req, version, correlation_id);
    boost::system::error_code ec;
    co_await s.write(boost::asio::buffer(w.buffer().data(), w.buffer().size()), ec);
    std::byte prefix[4];
    if (!ec) {
        co_await s.read(boost::asio::buffer(prefix, 4), ec);
    }
    if (ec) {
        why = ec.message();
        co_return std::nullopt;
    }
    const std::int32_t size = protocol::load_i32(prefix);
    if (size < 4 || size > upstream_exchange_max_response_bytes) {
        why = "response size " + std::to_string(size) + " out of range";
        co_return std::nullopt;
    }
    auto frame = std::make_shared<protocol::byte_buffer>(static_cast<std::size_t>(size));
    frame->resize(static_cast<std::size_t>(size));
    co_await s.read(boost::asio::buffer(frame->data(), frame->size()), ec);
    if (ec) {
        why = ec.message();
        co_return std::nullopt;
    }
    const protocol::kafka::api_info* info = protocol::kafka::find_api(Request::key);
    const auto body_at = response_body_offset(frame->view(),
                                              info->response_header_version(version));
    if (!body_at || protocol::load_i32(frame->data()) != correlation_id) {
        why = "malformed response header";
        co_return std::nullopt;
    }
    protocol::reader r(frame->view().subspan(*body_at), frame);
    Response resp;
    resp.decode(r, version);
    if (!r.ok()) {
        why = "malformed " + std::string(info->name) + " response: " + r.error().message();
        co_return std::nullopt;
    }
    co_return resp;
}

}  // namespace sluice::gateway::proxy
